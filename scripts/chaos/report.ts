// The run's results as printed lines and as docs/reliability.md.
import { cpus, totalmem, type as osType, release } from "node:os";
import type { CampaignResult } from "./campaigns.ts";
import type { InvariantResult } from "./invariants.ts";

export interface RunReport {
  seed: number;
  mode: string;
  startedAt: Date;
  durationMs: number;
  versions: Record<string, string>;
  campaigns: CampaignResult[];
  /** The checks at the end of the run, over everything. */
  final: InvariantResult[];
  workDir: string;
}

export function invariantLine(r: InvariantResult): string {
  return `${r.pass ? "PASS" : "FAIL"}  ${r.name}: ${r.counts}`;
}

export function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? "unknown CPU"}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${osType()} ${release()}`;
}

function countsText(counts: Record<string, number>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? "—" : entries.map(([k, v]) => `${k}: ${v}`).join("; ");
}

export function renderReliability(report: RunReport): string {
  const passed =
    report.final.every((r) => r.pass) && report.campaigns.every((c) => c.invariants.every((r) => r.pass));
  const lines = [
    "# Reliability: fault campaigns",
    "",
    "Written by `npm run chaos` (`scripts/chaos/`, described in [chaos.md](chaos.md)). Re-run with the same",
    `seed to replay the same flows, faults and kill moments: \`npm run chaos -- --seed ${report.seed}${report.mode === "quick" ? " --quick" : ""}\`.`,
    "",
    `- Result: **${passed ? "every invariant held" : "INVARIANTS FAILED"}**`,
    `- Seed: ${report.seed}; mode: ${report.mode}; duration ${(report.durationMs / 60_000).toFixed(1)} min`,
    `- Date: ${report.startedAt.toISOString()}`,
    `- Machine: ${machine()}`,
    `- Versions: ${Object.entries(report.versions)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
    "",
    "## Campaigns",
    "",
    "| Campaign | Flows | What struck | Platform requests (per unit of work: flows + keys issued) | Duration |",
    "| --- | --- | --- | --- | --- |",
  ];
  for (const c of report.campaigns) {
    const flows = Object.entries(c.flows)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
    lines.push(
      `| ${c.name}: ${c.title} | ${c.flowCount} (${flows}) | ${countsText(c.counts)} | ${c.requests} (${(c.requests / Math.max(1, c.work)).toFixed(1)} over ${c.work}) | ${(c.durationMs / 1000).toFixed(0)} s |`,
    );
  }
  lines.push("", "## Platform requests by route", "");
  for (const c of report.campaigns) {
    lines.push(`- ${c.name}: ${c.byRoute.map(([route, n]) => `\`${route}\` ${n}`).join(", ")}`);
  }
  lines.push("", "## Invariants after each campaign", "");
  for (const c of report.campaigns) {
    lines.push(`### ${c.name}`, "", "```", ...c.invariants.map(invariantLine), "```", "");
    for (const r of c.invariants.filter((i) => !i.pass)) {
      lines.push(`Left behind (${r.name}):`, "", ...r.problems.slice(0, 20).map((p) => `- ${p}`), "");
    }
  }
  lines.push("## Invariants at the end of the run", "", "```", ...report.final.map(invariantLine), "```", "");
  for (const r of report.final.filter((i) => !i.pass)) {
    lines.push(`Left behind (${r.name}):`, "", ...r.problems.slice(0, 20).map((p) => `- ${p}`), "");
  }
  return `${lines.join("\n")}\n`;
}
