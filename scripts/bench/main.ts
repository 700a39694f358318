// `npm run bench` / `npm run bench:quick`: the operator at scale against a real
// local API server and the platform emulator (rate limits on), as a separate
// process. Prints the figures and writes docs/performance.md. See docs/benchmarks.md.
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { runConvergence, type ConvergenceResult } from "./convergence.ts";
import { asRun, flagReader, runInLab, say, sharedOptions } from "./cli.ts";
import { gitRevision, handWrittenSections, renderMarkdown, type BenchReport } from "./report.ts";
import {
  fullShapes,
  parseShape,
  quickShapes,
  shapeLabel,
  shapeSyntax,
  type LockScope,
  type Shape,
} from "./shapes.ts";
import { runSteady, type SteadyResult } from "./steady.ts";

const usage = `Usage: node scripts/bench/main.ts [--quick] [options]

Convergence: each shape is a fresh emulator (rate limits on), namespace and operator process; the
shapes run one after another and their figures are written side by side.
  --shape SPEC            a workload shape, repeatable: ${shapeSyntax}
                          (full: ${fullShapes.map((s) => `${s.endpoints}x${s.projects}`).join(", ")}; quick: ${quickShapes.map((s) => `${s.endpoints}x${s.projects}`).join(", ")})
  --endpoints N           with --projects and no --shape: that one shape
  --projects N
  --operation-ms N        mean duration of a platform operation, for every shape that does not say (default 2000)
  --jitter F              each operation lasts operation-ms × (1 ± F), drawn at random (default 0.25)
  --lock-scope S          what a running operation locks: project (the platform's rule, default) or branch
  --seed N                seed of the emulator's draws, so a run repeats (default 2026)
  --run-timeout S         cap of each convergence run, seconds (default: 5x the shape's larger bound + 60)
  --no-branch-scope       skip the first shape again on the emulator's optimistic branch-scoped lock
  --no-side-by-side       skip the first shape again with per-operation polling (100 ms and 1 s)
  --no-convergence        skip every convergence run (side by side included): steady state only
Steady state:
  --idle N                idle ComputeEndpoints (full: 10000)
  --idle-projects N       projects of the idle endpoints (full: 20)
  --resync S              resync used for the measurement, seconds (full: 60)
  --window S              measuring window, seconds (full: 120)
  --no-steady             skip the steady state
Output:
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
    ...sharedOptions,
    quick: { type: "boolean", default: false },
    shape: { type: "string", multiple: true, default: [] },
    endpoints: { type: "string" },
    projects: { type: "string" },
    idle: { type: "string" },
    "idle-projects": { type: "string" },
    "lock-scope": { type: "string", default: "project" },
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
    "operator-flags": { type: "string", default: "" },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}

const quick = values.quick;
const { refuse, positive: number, jitter: jitterOf } = flagReader("bench", usage);
const idle = number(values.idle, quick ? 500 : 10_000, "idle");
const idleProjects = number(values["idle-projects"], quick ? 10 : 20, "idle-projects");
const operationMs = number(values["operation-ms"], 2000, "operation-ms");
const jitter = jitterOf(values.jitter);
const lockScope = values["lock-scope"];
if (lockScope !== "project" && lockScope !== "branch") refuse("--lock-scope must be project or branch");
const randomSeed = number(values.seed, 2026, "seed");
const defaults = { operationMs, jitter, lockScope: lockScope as LockScope, randomSeed };
let shapes: Shape[];
try {
  if (values.shape.length > 0) {
    if (values.endpoints !== undefined || values.projects !== undefined) {
      refuse("--shape and --endpoints/--projects: give the shapes one way");
    }
    shapes = values.shape.map((text) => parseShape(text, defaults));
  } else if (values.endpoints !== undefined || values.projects !== undefined) {
    shapes = [
      parseShape(
        `${values.endpoints ?? (quick ? 100 : 1000)}x${values.projects ?? (quick ? 10 : 20)}`,
        defaults,
      ),
    ];
  } else {
    shapes = (quick ? quickShapes : fullShapes).map((s) => ({ ...defaults, ...s }));
  }
} catch (err) {
  shapes = refuse(err instanceof Error ? err.message : String(err));
}
const resyncMs = number(values.resync, quick ? 20 : 60, "resync") * 1000;
const windowMs = number(values.window, quick ? 40 : 120, "window") * 1000;
/** The cap of a run: five times the larger of its rough bounds (rate, lock), plus a minute. */
const runTimeoutMs = (shape: Shape): number => {
  const rateMs = (shape.endpoints / 700) * 60_000 + shape.operationMs;
  const lockMs = Math.ceil(shape.endpoints / shape.projects) * shape.operationMs * (1 + shape.jitter);
  return number(values["run-timeout"], (5 * Math.max(rateMs, lockMs) + 60_000) / 1000, "run-timeout") * 1000;
};
const runConvergenceRuns = values.convergence && !values["no-convergence"];
const sideBySide = runConvergenceRuns && values["side-by-side"] && !values["no-side-by-side"];
const branchScope =
  runConvergenceRuns &&
  values["branch-scope"] &&
  !values["no-branch-scope"] &&
  shapes[0]?.lockScope === "project";
const steady = values.steady && !values["no-steady"];

const startedAt = new Date();
const revision = gitRevision();
await runInLab(
  "bench",
  {
    prefix: "neon-bench-",
    keep: values.keep || values.trace,
    intro: (workDir) =>
      `bench: ${quick ? "quick" : "full"} mode; work directory ${workDir}\nbench: starting the local Kubernetes API server...`,
  },
  async (lab, workDir) => {
    const shapeResults: ConvergenceResult[] = [];
    const sideResults: ConvergenceResult[] = [];
    const extraFlags = values["operator-flags"].split(/\s+/).filter((f) => f !== "");
    const converge = async (label: string, shape: Shape, flags: string[]): Promise<ConvergenceResult> => {
      say(`bench: convergence, ${label}`);
      return runConvergence(lab, {
        label,
        shape,
        flags: [...flags, ...extraFlags],
        timeoutMs: runTimeoutMs(shape),
        workDir,
        trace: values.trace,
        say,
      });
    };
    if (runConvergenceRuns) {
      for (const [i, shape] of shapes.entries()) {
        shapeResults.push(await converge(shapeLabel(shape, i), shape, []));
      }
    }
    // The first shape again, with only the lock scope or the polling strategy changed.
    const first = shapes[0];
    if (first && branchScope) {
      sideResults.push(await converge("branch-scope", { ...first, lockScope: "branch" }, []));
    }
    if (first && sideBySide) {
      sideResults.push(
        await converge("perop-100ms", first, ["--operation-polling=per-operation", "--poll-interval=100ms"]),
        await converge("perop-1s", first, ["--operation-polling=per-operation", "--poll-interval=1s"]),
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
      mode: `${quick ? "quick" : "full"} (${runConvergenceRuns ? `shapes ${shapes.map((s) => `${s.endpoints} over ${s.projects}`).join(", ")}` : "no convergence runs"}; ${steady ? `${idle} idle over ${idleProjects} projects` : "no steady state"})`,
      command:
        quick && process.argv.slice(2).join(" ") === "--quick" ? "npm run bench:quick" : asRun("bench"),
      startedAt,
      durationMs: Date.now() - startedAt.getTime(),
      kubernetesVersion: lab.controlPlane.version,
      operationMs,
      jitter,
      randomSeed,
      revision,
      operatorNodeFlags: lab.operator.nodeFlags,
      shapes: shapeResults,
      sideBySide: sideResults,
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
  },
);
