// The figures as a printed table and as docs/performance.md: machine, date,
// versions, mode, every figure with its target beside it and PASS/MISS.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import type { ConvergenceResult } from "./convergence.ts";
import { repoRoot } from "./lab.ts";
import { percentile, round, seconds } from "./stats.ts";
import type { SteadyResult } from "./steady.ts";

export interface BenchReport {
  mode: string;
  command: string;
  startedAt: Date;
  durationMs: number;
  kubernetesVersion: string;
  /** The defaults of the shapes (and the steady state's operations). */
  operationMs: number;
  /** Operations last operationMs × (1 ± jitter), drawn by the emulator from randomSeed. */
  jitter: number;
  randomSeed: number;
  /** Git revision of the tree when the bench started (the operator ran from this tree). */
  revision: string;
  /** Node flags the operator ran with: the image's (Dockerfile ENTRYPOINT). */
  operatorNodeFlags: string[];
  /** One run per shape; the first is described in detail. */
  shapes: ConvergenceResult[];
  /** The first shape again with another lock scope or polling strategy. */
  sideBySide: ConvergenceResult[];
  steady: SteadyResult | undefined;
  steadyError?: string | undefined;
}

const mb = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MB`;
const verdict = (ok: boolean) => (ok ? "PASS" : "MISS");

function packageVersion(name: string): string {
  try {
    const pkg = JSON.parse(readFileSync(join(repoRoot, "node_modules", name, "package.json"), "utf8")) as {
      version: string;
    };
    return pkg.version;
  } catch {
    return "?";
  }
}

function operatorVersion(): string {
  const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
    name: string;
    version: string;
  };
  return `${pkg.name} ${pkg.version}`;
}

export function gitRevision(): string {
  try {
    const rev = execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: repoRoot,
      encoding: "utf8",
    }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain"], { cwd: repoRoot, encoding: "utf8" }).trim();
    return dirty ? `${rev} (with uncommitted changes)` : rev;
  } catch {
    return "?";
  }
}

function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

function perEndpoint(r: ConvergenceResult, value: number): string {
  return String(round(value / r.endpoints, 2));
}

function describeRun(r: ConvergenceResult): string {
  const polling = r.flags.length === 0 ? "batched, poll 5 s (default)" : r.flags.join(" ");
  return `${polling}; ${r.shape.lockScope} lock`;
}

/** All Ready as a multiple of the floor, and p50 as a share of all Ready; undefined when not all were Ready. */
function ratios(r: ConvergenceResult): { floor?: number; p50Share?: number } {
  const all = r.allReadyMs;
  if (all === undefined) return {};
  return {
    floor: all / r.floor.ms,
    ...(r.latencyP50Ms === undefined ? {} : { p50Share: r.latencyP50Ms / all }),
  };
}

/** The targets of issue 27 a run missed (printed, never asserted). */
function misses(r: ConvergenceResult): string[] {
  const { floor, p50Share } = ratios(r);
  const out: string[] = [];
  if (floor === undefined) out.push("not all Ready");
  if (floor !== undefined && floor > 1.3) out.push("time");
  if (p50Share !== undefined && p50Share > 0.6) out.push("p50");
  if (r.platformRequests / r.endpoints > 1.5) out.push("requests");
  if (r.rateLimited > 0) out.push("429s");
  if (r.statusWrites / r.endpoints > 3) out.push("status writes");
  return out;
}

/** `1.02 / 0.22 / 0.31 / 0.05 / 0.01` per endpoint: creates, 423s, operations lists, endpoint lists, others. */
function requestSplit(r: ConvergenceResult): string {
  const q = r.requests;
  return [q.creates, q.locked, q.operationsLists, q.endpointLists, q.others]
    .map((n) => perEndpoint(r, n))
    .join(" / ");
}

function shapesSection(shapes: readonly ConvergenceResult[]): string[] {
  const out: string[] = ["## Shapes", ""];
  out.push(
    "Each shape in the same run, one after another: a fresh emulator (rate limits on, the shape's lock scope and seed), a fresh namespace and a fresh operator process with its defaults; N ComputeEndpoints over P projects (round robin, each the read-write endpoint of a branch of its own) applied at once. Targets of issue 27 are in the headings, printed beside the figures and never asserted; the last column names the ones missed. The _floor_ is the larger of the rate floor (every create admitted at the platform's limits as the emulator enforces them, plus the shortest operation drawn: only creates count, since each endpoint needs one and any other request is a client's choice) and the operations' floor (project lock: the busiest project's drawn operations one after another; branch lock: the longest operation drawn); how each was computed is listed below the table. _Floor's schedule_ is a schedule that meets both bounds together (creates sent as the limits admit them, each to the project whose lock frees first): its p50 share is what the shape itself allows.",
    "",
  );
  const rows = shapes.map((r) => {
    const { floor, p50Share } = ratios(r);
    const schedule = r.floor.schedule;
    return [
      `${r.endpoints} over ${r.projects}`,
      `${r.shape.lockScope}, ${r.shape.operationMs} ms ± ${Math.round(r.shape.jitter * 100)}%, seed ${r.shape.randomSeed}`,
      seconds(r.floor.ms),
      r.allReadyMs === undefined
        ? `${r.ready}/${r.endpoints} Ready in ${seconds(r.elapsedMs)}`
        : seconds(r.allReadyMs),
      floor === undefined ? "n/a" : `${round(floor, 2)}×`,
      p50Share === undefined ? "n/a" : `${round(p50Share, 2)}×`,
      `${round(schedule.p50Ms / Math.max(1, schedule.allMs), 2)}×`,
      perEndpoint(r, r.platformRequests),
      requestSplit(r),
      String(r.rateLimited),
      perEndpoint(r, r.statusWrites),
      misses(r).join(", ") || "none",
    ];
  });
  out.push(
    table(
      [
        "Shape",
        "Lock, operations, seed",
        "Floor",
        "All Ready",
        "÷ floor (≤ 1.3×)",
        "p50 ÷ all Ready (≤ 0.6×)",
        "Floor's schedule p50 share",
        "Requests / endpoint (≤ 1.5)",
        "Creates / 423s / operations lists / endpoint lists / others, per endpoint",
        "429s (0)",
        "Status writes / endpoint (≤ 3)",
        "Missed",
      ],
      rows,
    ),
    "",
  );
  out.push("How each floor was computed (figures of this run):", "");
  for (const r of shapes) out.push(`- ${r.endpoints} over ${r.projects}: ${r.floor.how}.`);
  out.push("");
  return out;
}

function routeRows(r: ConvergenceResult): string[][] {
  return Object.entries(r.byRoute)
    .map(([route, byStatus]) => {
      const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
      const statuses = Object.entries(byStatus)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([s, n]) => `${s}: ${n}`)
        .join(", ");
      return { route, total, statuses };
    })
    .sort((a, b) => b.total - a.total)
    .map(({ route, total, statuses }) => [`\`${route}\``, String(total), perEndpoint(r, total), statuses]);
}

export function renderMarkdown(report: BenchReport): string {
  const out: string[] = [];
  const cpu = cpus()[0]?.model ?? "?";
  out.push("# Performance", "");
  out.push(
    `Written by \`${report.command}\` (scripts/bench/); see docs/benchmarks.md for what each figure means. Every figure below was measured in this run; none is typed in.`,
    "",
  );
  out.push(
    table(
      ["", ""],
      [
        ["Date", report.startedAt.toISOString()],
        ["Mode", report.mode],
        [
          "Machine",
          `${cpus().length} CPUs (${cpu}), ${mb(totalmem())} memory, ${process.platform} ${process.arch}`,
        ],
        ["Node", process.version],
        ["Kubernetes", `${report.kubernetesVersion} (local kube-apiserver + etcd from test/controlplane)`],
        ["Operator", `${operatorVersion()} at ${report.revision}`],
        [
          "Operator process",
          `\`node ${[...report.operatorNodeFlags, "dist/cli.js run"].join(" ")}\` (compiled from this tree; Node flags as in the Dockerfile's ENTRYPOINT)`,
        ],
        [
          "Packages",
          ["@kubernetes/client-node", "undici", "zod", "pino", "prom-client"]
            .map((p) => `${p} ${packageVersion(p)}`)
            .join(", "),
        ],
        [
          "Platform",
          `emulator in the bench process, rate limits on (700/min per account, 40/s per route), operations last ${report.operationMs} ms ± ${Math.round(report.jitter * 100)}% drawn at random (seed ${report.randomSeed}) unless a shape says otherwise; a running operation locks its project (the platform's rule) unless a row says otherwise`,
        ],
        ["Run time", seconds(report.durationMs)],
      ],
    ),
    "",
  );

  const base = report.shapes[0];
  if (base) {
    out.push("## Convergence", "");
    out.push(
      `The first shape in detail: ${base.endpoints} ComputeEndpoints over ${base.projects} projects (one read-write endpoint per branch), applied at once by one server-side \`kubectl apply\`; the operator is a separate process (see "Operator process" above) with its defaults; the emulator's lock is ${base.shape.lockScope}-wide, operations ${base.shape.operationMs} ms ± ${Math.round(base.shape.jitter * 100)}%, seed ${base.shape.randomSeed}. The floor (see Shapes below): ${base.floor.how}.`,
      "",
    );
    const allReady = base.allReadyMs;
    const { floor: ratio, p50Share } = ratios(base);
    const rows: string[][] = [
      [
        "Time until all Ready",
        allReady === undefined
          ? `not all Ready: ${base.ready}/${base.endpoints} after ${seconds(base.elapsedMs)}`
          : `${seconds(allReady)} = ${round(ratio ?? 0, 2)}× the floor`,
        "≤ 1.3× the floor",
        verdict(ratio !== undefined && ratio <= 1.3),
      ],
      [
        "Platform requests per endpoint (all routes, create included)",
        `${perEndpoint(base, base.platformRequests)} (${base.platformRequests} in all)`,
        "≤ 1.5",
        verdict(base.platformRequests / base.endpoints <= 1.5),
      ],
      [
        "Of which per endpoint: creates / 423s / operations lists / endpoint lists / others",
        requestSplit(base),
        "",
        "",
      ],
      ["429s received", String(base.rateLimited), "0", verdict(base.rateLimited === 0)],
      [
        "Status writes per endpoint",
        `${perEndpoint(base, base.statusWrites)} (${base.statusWrites} in all)`,
        "≤ 3",
        verdict(base.statusWrites / base.endpoints <= 3),
      ],
      [
        "Apply-to-Ready latency p50 / p99",
        `${seconds(base.latencyP50Ms)} / ${seconds(base.latencyP99Ms)}`,
        "",
        "",
      ],
      [
        "Apply-to-Ready p50 as a share of the time until all Ready",
        p50Share === undefined ? "n/a" : `${round(p50Share, 2)}×`,
        "≤ 0.6×",
        verdict(p50Share !== undefined && p50Share <= 0.6),
      ],
      ["Operator CPU (apply to all Ready)", `${round(base.cpuSeconds, 1)} s`, "", ""],
      ["Operator peak RSS", mb(base.peakRssBytes), "", ""],
      ["Operator RSS before the apply (idle, empty namespace)", mb(base.rssAtStartBytes), "", ""],
      [
        "Reconciles per endpoint (by result)",
        `${perEndpoint(base, base.reconciles)} (${Object.entries(base.reconcileResults)
          .map(([k, v]) => `${k} ${v}`)
          .join(", ")})`,
        "",
        "",
      ],
      [
        "Mean work-queue wait / mean reconcile duration",
        `${seconds(base.meanQueueWaitMs)} / ${seconds(base.meanReconcileMs)}`,
        "",
        "",
      ],
      [
        "Time requests waited for the client's rate budget (sum)",
        `${round(base.budgetWaitSeconds, 1)} s`,
        "",
        "",
      ],
      ["kubectl apply of all resources took", seconds(base.applyMs), "", ""],
    ];
    out.push(table(["Figure", "Measured", "Target", ""], rows), "");
    out.push(
      "Every endpoint of a project waits for that project's running operations: the operator holds each project's changes and sends the next when the last one's operations are expected to have ended (docs/platform-client.md, the mutation gate), so the busiest project's operations in a row are the floor whenever they outlast the rate budget's.",
      "",
    );
    out.push("Platform requests by route (where the requests went):", "");
    out.push(table(["Route", "Requests", "Per endpoint", "By status"], routeRows(base)), "");
  }

  if (report.shapes.length > 0) out.push(...shapesSection(report.shapes));

  if (report.sideBySide.length > 0 && base) {
    out.push("## Side by side: lock scopes and polling strategies (same run, same workload)", "");
    out.push(
      "Each row is a fresh namespace, a fresh emulator (same seed, so the same drawn durations) and a fresh operator process; only the emulator's lock scope or the operation polling flags differ. The branch-scoped lock is the emulator's optimistic variant (operations of different branches of one project may overlap): nothing public says the platform allows it. `per-operation` GETs each pending operation by id, as the platform's Terraform provider (every 100 ms) and official SDK (every 1 s) do; `batched` settles all of a project's pending operations with one operations list.",
      "",
    );
    const rows = [base, ...report.sideBySide].map((r) => {
      const time = r.allReadyMs;
      const baseTime = base.allReadyMs;
      return [
        describeRun(r),
        time === undefined
          ? `not all Ready (${r.ready}/${r.endpoints}) in ${seconds(r.elapsedMs)}`
          : seconds(time),
        time === undefined ? "n/a" : `${round(time / r.floor.ms, 2)}× of ${seconds(r.floor.ms)}`,
        time === undefined || baseTime === undefined ? "n/a" : `${round(time / baseTime, 2)}×`,
        perEndpoint(r, r.platformRequests),
        String(r.locked),
        `${round(r.platformRequests / base.platformRequests, 2)}×`,
        String(r.rateLimited),
        perEndpoint(r, r.statusWrites),
        `${seconds(r.latencyP50Ms)} / ${seconds(r.latencyP99Ms)}`,
        `${round(r.cpuSeconds, 1)} s`,
        mb(r.peakRssBytes),
      ];
    });
    out.push(
      table(
        [
          "Run",
          "All Ready",
          "Vs its floor",
          "Time vs first row",
          "Requests / endpoint",
          "423s",
          "Requests vs first row",
          "429s",
          "Status writes / endpoint",
          "Latency p50 / p99",
          "Operator CPU",
          "Peak RSS",
        ],
        rows,
      ),
      "",
    );
    for (const r of report.sideBySide) {
      out.push(`Requests by route, ${describeRun(r)}:`, "");
      out.push(table(["Route", "Requests", "Per endpoint", "By status"], routeRows(r)), "");
    }
  }

  if (report.steadyError) out.push("## Steady state", "", `Failed: ${report.steadyError}.`, "");
  const s = report.steady;
  if (s) {
    out.push("## Steady state", "");
    const scale = s.resyncMs / s.defaultResyncMs;
    const perMinute = (n: number) => (n / s.windowMs) * 60_000;
    out.push(
      `${s.idle} idle ComputeEndpoints over ${s.projects} projects (read replicas, never suspending, adopted by id from a pre-filled platform: creating them through a 700/min budget would take ${seconds((s.idle / 700) * 60_000)}). Measured over ${seconds(s.windowMs)} with the resync shortened to ${seconds(s.resyncMs)} so that the window spans ${round(s.windowMs / s.resyncMs, 1)} resyncs; "at the default resync" scales the per-minute figure by ${seconds(s.resyncMs)} / ${seconds(s.defaultResyncMs)}, assuming requests are proportional to how often objects are resynced.`,
      "",
    );
    const rows: string[][] = [
      [
        "Adoption of all endpoints (apply to all Ready)",
        s.adoptMs === undefined ? "not all Ready in time" : seconds(s.adoptMs),
        "",
        "",
      ],
      [
        `Platform requests per minute at resync ${seconds(s.resyncMs)} (measured)`,
        String(round(perMinute(s.platformRequests), 1)),
        "",
        "",
      ],
      [
        `Platform requests per minute at the default resync ${seconds(s.defaultResyncMs)} (scaled)`,
        String(round(perMinute(s.platformRequests) * scale, 1)),
        "",
        "",
      ],
      [
        "Endpoint-list requests per project per resync interval",
        String(round(s.listsPerProjectPerResync, 2)),
        "≤ 1",
        verdict(s.listsPerProjectPerResync <= 1),
      ],
      ["429s in the window", String(s.rateLimited), "0", verdict(s.rateLimited === 0)],
      [
        "Operator RSS (max sampled in the window)",
        mb(s.rssBytes),
        "≤ 256 MB",
        verdict(s.rssBytes <= 256 * 1024 * 1024),
      ],
      ["Operator peak RSS (whole run, adoption included)", mb(s.peakRssBytes), "", ""],
      [
        "Operator V8 heap at the end of the window: used / committed; external memory",
        `${mb(s.heap.usedBytes)} / ${mb(s.heap.totalBytes)}; ${mb(s.heap.externalBytes)}`,
        "",
        "",
      ],
      [
        "Status writes per endpoint per resync (from the watch)",
        String(round(s.statusWritesInWindow / s.idle / (s.windowMs / s.resyncMs), 2)),
        "",
        "",
      ],
      ["Operator CPU per minute idle", `${round((s.cpuSecondsInWindow / s.windowMs) * 60_000, 2)} s`, "", ""],
      [
        `Kubernetes API requests per minute by the operator at resync ${seconds(s.resyncMs)}`,
        String(round(perMinute(s.kubeRequests), 1)),
        "",
        "",
      ],
      [
        `Kubernetes API requests per minute by the operator at the default resync (scaled)`,
        String(round(perMinute(s.kubeRequests) * scale, 1)),
        "",
        "",
      ],
      [
        `A change's arrival in the API server (watch event) to its PATCH on the platform, p50 / p99 (n = ${s.changeLatencies.length}${s.changeMisses ? `, ${s.changeMisses} not seen within 30 s` : ""})`,
        `${seconds(percentile(s.changeLatencies, 50))} / ${seconds(percentile(s.changeLatencies, 99))}`,
        "",
        "",
      ],
      [
        "The same from the start of `kubectl apply` (kubectl start-up included), p50 / p99",
        `${seconds(percentile(s.changeLatenciesFromKubectl, 50))} / ${seconds(percentile(s.changeLatenciesFromKubectl, 99))}`,
        "",
        "",
      ],
    ];
    out.push(table(["Figure", "Measured", "Target", ""], rows), "");
    out.push("Platform requests in the window by route:", "");
    out.push(
      table(
        ["Route", "Requests", "Per minute"],
        Object.entries(s.byRoute).map(([route, n]) => [
          `\`${route}\``,
          String(n),
          String(round(perMinute(n), 1)),
        ]),
      ),
      "",
    );
    out.push(
      "Kubernetes API requests in the window by verb and resource (all clients: the operator, the bench's watch, the control plane's controllers):",
      "",
    );
    out.push(
      table(
        ["Verb and resource", "Requests"],
        Object.entries(s.kubeByVerb)
          .sort(([, a], [, b]) => b - a)
          .map(([k, n]) => [k, String(n)]),
      ),
      "",
    );
  }
  return out.join("\n");
}

/** Headings of the sections this report writes; every other section of the file is written by hand. */
const generatedSections = ["Convergence", "Shapes", "Side by side", "Steady state"];

/**
 * The hand-written sections of an earlier report (the image, memory, sections other benches
 * add), in their order, to be kept after a new one: a run rewrites only what it measured.
 */
export function handWrittenSections(previous: string): string {
  const sections = previous.split(/^(?=## )/m).slice(1);
  return sections
    .filter((section) => !generatedSections.some((title) => section.startsWith(`## ${title}`)))
    .join("")
    .trim();
}
