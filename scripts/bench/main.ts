// `npm run bench` / `npm run bench:quick`: the operator at scale against a real
// local API server and the platform emulator (rate limits on), as a separate
// process. Prints the figures and writes docs/performance.md. See docs/benchmarks.md.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runConvergence, type ConvergenceResult } from "./convergence.ts";
import { repoRoot, startLab } from "./lab.ts";
import { killOperatorProcesses } from "./operator-process.ts";
import { gitRevision, handWrittenSections, renderMarkdown, type BenchReport } from "./report.ts";
import { runSteady, type SteadyResult } from "./steady.ts";

const usage = `Usage: node scripts/bench/main.ts [--quick] [options]

  --quick                 CI size: 100 endpoints over 10 projects, 500 idle
  --endpoints N           ComputeEndpoints in each convergence run (full: 1000)
  --projects N            projects they are spread over (full: 20)
  --idle N                idle ComputeEndpoints for the steady state (full: 10000)
  --idle-projects N       projects of the idle endpoints (full: 20)
  --operation-ms N        how long each platform operation runs on average (default 2000)
  --jitter F              each operation lasts operation-ms × (1 ± F), drawn at random (default 0.25)
  --seed N                seed of the emulator's draws, so a run repeats (default 2026)
  --no-branch-scope       skip the run with the emulator's optimistic branch-scoped lock
  --resync S              resync used for the steady-state measurement, seconds (full: 60)
  --window S              steady-state measuring window, seconds (full: 120)
  --run-timeout S         cap of each convergence run, seconds (default: 5x the larger bound + 60)
  --no-side-by-side       skip the per-operation polling runs
  --no-convergence        skip the convergence runs (side by side included): steady state only
  --no-steady             skip the steady state
  --out PATH              where to write the report (default docs/performance.md)
  --no-write              print only
  --keep                  keep the work directory (operator logs)
  --operator-flags "..."  extra flags for the operator of every convergence run (an experiment;
                          the report's command line shows them)
  --trace                 keep the emulator's request log and print where each run's time went
                          (per project: lock idle between operations, 423s, tail); implies --keep
`;

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    endpoints: { type: "string" },
    projects: { type: "string" },
    idle: { type: "string" },
    "idle-projects": { type: "string" },
    "operation-ms": { type: "string", default: "2000" },
    jitter: { type: "string", default: "0.25" },
    seed: { type: "string", default: "2026" },
    "branch-scope": { type: "boolean", default: true },
    "no-branch-scope": { type: "boolean", default: false },
    resync: { type: "string" },
    window: { type: "string" },
    "run-timeout": { type: "string" },
    "side-by-side": { type: "boolean", default: true },
    "no-side-by-side": { type: "boolean", default: false },
    convergence: { type: "boolean", default: true },
    "no-convergence": { type: "boolean", default: false },
    steady: { type: "boolean", default: true },
    "no-steady": { type: "boolean", default: false },
    out: { type: "string", default: join(repoRoot, "docs", "performance.md") },
    "no-write": { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    trace: { type: "boolean", default: false },
    "operator-flags": { type: "string", default: "" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}

const quick = values.quick;
const number = (text: string | undefined, fallback: number, name: string): number => {
  const n = text === undefined ? fallback : Number(text);
  if (!Number.isFinite(n) || n <= 0) {
    process.stderr.write(`bench: --${name} must be a positive number\n\n${usage}`);
    process.exit(2);
  }
  return n;
};
const endpoints = number(values.endpoints, quick ? 100 : 1000, "endpoints");
const projects = number(values.projects, quick ? 10 : 20, "projects");
const idle = number(values.idle, quick ? 500 : 10_000, "idle");
const idleProjects = number(values["idle-projects"], quick ? 10 : 20, "idle-projects");
const operationMs = number(values["operation-ms"], 2000, "operation-ms");
const jitter = Number(values.jitter);
if (!(jitter >= 0 && jitter < 1)) {
  process.stderr.write(`bench: --jitter must be at least 0 and below 1\n\n${usage}`);
  process.exit(2);
}
const randomSeed = number(values.seed, 2026, "seed");
const resyncMs = number(values.resync, quick ? 20 : 60, "resync") * 1000;
const windowMs = number(values.window, quick ? 40 : 120, "window") * 1000;
const floorMs = (endpoints / 700) * 60_000 + operationMs;
const lockMs = Math.ceil(endpoints / projects) * operationMs * (1 + jitter);
const runTimeoutMs =
  number(values["run-timeout"], (5 * Math.max(floorMs, lockMs) + 60_000) / 1000, "run-timeout") * 1000;
const runConvergenceRuns = values.convergence && !values["no-convergence"];
const sideBySide = runConvergenceRuns && values["side-by-side"] && !values["no-side-by-side"];
const branchScope = runConvergenceRuns && values["branch-scope"] && !values["no-branch-scope"];
const steady = values.steady && !values["no-steady"];
const argv = process.argv.slice(2).join(" ");

const say = (line: string) => process.stdout.write(`${line}\n`);
const startedAt = new Date();
const revision = gitRevision();
const workDir = await mkdtemp(join(tmpdir(), "neon-bench-"));
say(`bench: ${quick ? "quick" : "full"} mode; work directory ${workDir}`);
say("bench: starting the local Kubernetes API server...");
const lab = await startLab(workDir);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    say(`bench: ${signal}, stopping; logs kept in ${workDir}`);
    killOperatorProcesses();
    void lab.stop().finally(() => process.exit(130));
  });
}
let failed = false;
try {
  const convergence: ConvergenceResult[] = [];
  type Run = { label: string; flags: string[]; lockScope: "project" | "branch" };
  // The platform's lock is project-wide: that run comes first and carries the targets.
  const runs: Run[] = runConvergenceRuns ? [{ label: "batched", flags: [], lockScope: "project" }] : [];
  if (branchScope) runs.push({ label: "branch-scope", flags: [], lockScope: "branch" });
  if (sideBySide) {
    runs.push(
      {
        label: "perop-100ms",
        flags: ["--operation-polling=per-operation", "--poll-interval=100ms"],
        lockScope: "project",
      },
      {
        label: "perop-1s",
        flags: ["--operation-polling=per-operation", "--poll-interval=1s"],
        lockScope: "project",
      },
    );
  }
  const extraFlags = values["operator-flags"].split(/\s+/).filter((f) => f !== "");
  for (const run of runs) {
    run.flags = [...run.flags, ...extraFlags];
    say(`bench: convergence, ${run.label}`);
    convergence.push(
      await runConvergence(lab, {
        ...run,
        endpoints,
        projects,
        operationMs,
        jitter,
        randomSeed,
        timeoutMs: runTimeoutMs,
        workDir,
        trace: values.trace,
        say,
      }),
    );
  }
  let steadyResult: SteadyResult | undefined;
  let steadyError: string | undefined;
  if (steady) {
    say("bench: steady state");
    steadyResult = await runSteady(lab, {
      idle,
      projects: idleProjects,
      operationMs,
      resyncMs,
      defaultResyncMs: 600_000,
      windowMs,
      changes: Math.min(20, idleProjects),
      timeoutMs: Math.max(600_000, idle * 100),
      workDir,
      say,
    }).catch((err: unknown) => {
      // Reported, not fatal: the convergence figures still get written.
      steadyError = err instanceof Error ? err.message : String(err);
      say(`bench: steady state failed: ${steadyError}`);
      return undefined;
    });
  }
  const report: BenchReport = {
    mode: `${quick ? "quick" : "full"} (${runConvergenceRuns ? `${endpoints} endpoints over ${projects} projects` : "no convergence runs"}; ${steady ? `${idle} idle over ${idleProjects} projects` : "no steady state"})`,
    command:
      quick && argv === "--quick" ? "npm run bench:quick" : `npm run bench${argv ? ` -- ${argv}` : ""}`,
    startedAt,
    durationMs: Date.now() - startedAt.getTime(),
    kubernetesVersion: lab.controlPlane.version,
    operationMs,
    jitter,
    randomSeed,
    revision,
    operatorNodeFlags: lab.operator.nodeFlags,
    convergence,
    steady: steadyResult,
    steadyError: steadyError === undefined ? undefined : `${idle} idle endpoints: ${steadyError}`,
  };
  const markdown = renderMarkdown(report);
  say("");
  say(markdown);
  if (!values["no-write"]) {
    // Aligned tables read better in a terminal; prettier is a dev dependency of this checkout.
    const prettier = await import("prettier");
    const options = (await prettier.resolveConfig(values.out)) ?? {};
    const kept = handWrittenSections(await readFile(values.out, "utf8").catch(() => ""));
    const written = kept === "" ? markdown : `${markdown.trimEnd()}\n\n${kept}\n`;
    await writeFile(values.out, await prettier.format(written, { ...options, parser: "markdown" }));
    say(`bench: wrote ${values.out}`);
  }
} catch (err) {
  failed = true;
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.stderr.write(`bench: logs kept in ${workDir}\n`);
} finally {
  await lab.stop();
  if (!failed && !values.keep && !values.trace) await rm(workDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
