// One convergence run: a fresh emulator (rate limits on), a fresh namespace, the
// operator as a process with the given polling flags, N ComputeEndpoints applied
// at once; measured until all are Ready (or the time cap).
import { join } from "node:path";
import { startEmulator } from "../../tools/emulator/index.ts";
import type { Lab } from "./lab.ts";
import { counterByLabel, counterTotal, operatorInNamespace } from "./operator-process.ts";
import { durationsOf } from "./records.ts";
import { describeShape, floorOf, type Floor, type Shape } from "./shapes.ts";
import { percentile, sum } from "./stats.ts";
import { describeTrace, traceRun } from "./trace.ts";
import { untilReady } from "./watch.ts";
import { applyAll, manifest, placements, seedFor } from "./workload.ts";

export interface ConvergenceOptions {
  label: string;
  shape: Shape;
  /** Operator flags for the polling strategy. */
  flags: string[];
  timeoutMs: number;
  workDir: string;
  /** Keep the emulator's request log and write where the run's time went (trace.ts). */
  trace?: boolean;
  say: (line: string) => void;
}

/** Where a run's platform requests went. */
export interface RequestsByKind {
  /** Creates the platform accepted (201). */
  creates: number;
  /** 423s, on any route. */
  locked: number;
  /** `GET .../operations` (settling operations in bulk). */
  operationsLists: number;
  /** `GET .../endpoints` (the project's endpoint snapshot). */
  endpointLists: number;
  /** Everything else: reads of one operation by id, the key's account (`/auth`), 429s, others. */
  others: number;
}

export interface ConvergenceResult {
  label: string;
  flags: string[];
  endpoints: number;
  projects: number;
  ready: number;
  /** Apply start to the last Ready; undefined when not all became Ready in time. */
  allReadyMs: number | undefined;
  elapsedMs: number;
  applyMs: number;
  shape: Shape;
  /** No client could have every endpoint Ready sooner on this run's platform (shapes.ts). */
  floor: Floor;
  platformRequests: number;
  /** 423s received (a 423 costs a request like any other). */
  locked: number;
  requests: RequestsByKind;
  byRoute: Record<string, Record<string, number>>;
  rateLimited: number;
  statusWrites: number;
  latencyP50Ms: number | undefined;
  latencyP99Ms: number | undefined;
  cpuSeconds: number;
  peakRssBytes: number;
  reconciles: number;
  /** From the operator's own metrics, to tell where the time went. */
  reconcileResults: Record<string, number>;
  meanQueueWaitMs: number | undefined;
  meanReconcileMs: number | undefined;
  budgetWaitSeconds: number;
  rssAtStartBytes: number;
}

const cep = 'controller="computeendpoint"';
// client-go's workqueue families name the queue, not the controller.
const queue = 'name="computeendpoint"';

/** Mean of a histogram in milliseconds. */
function mean(metrics: string, name: string, filter: string): number | undefined {
  const count = counterTotal(metrics, `${name}_count`, filter);
  return count === 0 ? undefined : (counterTotal(metrics, `${name}_sum`, filter) / count) * 1000;
}

/** Where the requests went, from the emulator's counters by route and status. */
export function requestsByKind(
  byRoute: Record<string, Record<string, number>>,
  total: number,
): RequestsByKind {
  const creates = byRoute["POST /projects/:project_id/endpoints"]?.["201"] ?? 0;
  const locked = sum(Object.values(byRoute).map((s) => s["423"] ?? 0));
  // A 423 or 429 of a list is counted once, as a 423 or under "others".
  const ok = (route: string) => byRoute[route]?.["200"] ?? 0;
  const operationsLists = ok("GET /projects/:project_id/operations");
  const endpointLists = ok("GET /projects/:project_id/endpoints");
  return {
    creates,
    locked,
    operationsLists,
    endpointLists,
    others: total - creates - locked - operationsLists - endpointLists,
  };
}

export async function runConvergence(lab: Lab, o: ConvergenceOptions): Promise<ConvergenceResult> {
  const { shape } = o;
  const namespace = `bench-${o.label}`;
  const all = placements(shape.endpoints, shape.projects, o.label);
  const projectIds = [...new Set(all.map((p) => p.projectId))];
  const emulator = await startEmulator({
    seed: seedFor(all, projectIds),
    operationDurationMs: shape.operationMs,
    operationDurationJitter: shape.jitter,
    randomSeed: shape.randomSeed,
    lockScope: shape.lockScope,
    requestLogSize: o.trace ? 200_000 : 0,
  });
  const { watch, operator } = await operatorInNamespace(lab, {
    namespace,
    apiKey: emulator.bootstrapKey,
    platformUrl: emulator.url,
    logFile: join(o.workDir, `operator-${o.label}.log`),
    flags: o.flags,
  });
  try {
    const before = operator.sample();
    o.say(`  ${o.label}: applying ${describeShape(shape)} (${o.flags.join(" ") || "operator defaults"})`);
    const started = Date.now();
    const applyMs = await applyAll(
      lab,
      o.workDir,
      `${o.label}.yaml`,
      all.map((p) => manifest(p, namespace)),
    );
    const { timedOut } = await untilReady(watch, shape.endpoints, operator, o.timeoutMs, (ready, seconds) =>
      o.say(`  ${o.label}: ${ready}/${shape.endpoints} Ready after ${seconds} s`),
    );
    const elapsedMs = Date.now() - started;
    // Counted before the bench reads the drawn durations back (its own requests are not the operator's).
    const counters = emulator.requestLog.counters();
    const after = operator.sample();
    const drawn = new Map<string, number[]>();
    for (const projectId of projectIds) {
      drawn.set(projectId, await durationsOf(emulator.url, emulator.bootstrapKey, projectId));
    }
    const floor = floorOf(shape, drawn);
    const metrics = await operator.metrics();
    const tracked = [...watch.tracked.values()];
    const latencies = tracked.flatMap((t) => (t.readyAt === undefined ? [] : [t.readyAt - t.addedAt]));
    const readyTimes = tracked.flatMap((t) => (t.readyAt === undefined ? [] : [t.readyAt]));
    if (o.trace) {
      const trace = await traceRun({
        url: emulator.url,
        apiKey: emulator.bootstrapKey,
        log: emulator.requestLog.latest(),
        placements: all,
        readyAt: new Map([...watch.tracked].map(([name, t]) => [name, t.readyAt])),
        reasons: new Map([...watch.tracked].map(([name, t]) => [name, t.reasons])),
        appliedAt: started,
        file: join(o.workDir, `trace-${o.label}.json`),
      });
      for (const line of describeTrace(trace)) o.say(`  ${o.label}: ${line}`);
      const kube = await lab.writeSeconds();
      o.say(
        `  ${o.label}: trace: API server (whole lab so far): ${kube.writes} ComputeEndpoint writes, ${Math.round((kube.servedSeconds / Math.max(1, kube.writes)) * 1000)} ms each on average; the operator's requests queued ${kube.queuedSeconds.toFixed(1)} s in priority and fairness`,
      );
    }
    return {
      label: o.label,
      flags: o.flags,
      endpoints: shape.endpoints,
      projects: shape.projects,
      ready: watch.ready,
      allReadyMs: timedOut ? undefined : Math.max(...readyTimes) - started,
      elapsedMs,
      applyMs,
      shape,
      floor,
      platformRequests: counters.total,
      locked: sum(Object.values(counters.by_route).map((s) => s["423"] ?? 0)),
      requests: requestsByKind(counters.by_route, counters.total),
      byRoute: counters.by_route,
      rateLimited: sum(Object.values(counters.by_route).map((s) => s["429"] ?? 0)),
      statusWrites: sum(tracked.map((t) => t.statusWrites)),
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
      cpuSeconds: (after?.cpuSeconds ?? 0) - (before?.cpuSeconds ?? 0),
      peakRssBytes: after?.peakRssBytes ?? 0,
      reconciles: counterTotal(metrics, "controller_runtime_reconcile_total", cep),
      reconcileResults: counterByLabel(metrics, "controller_runtime_reconcile_total", "result", cep),
      meanQueueWaitMs: mean(metrics, "workqueue_queue_duration_seconds", queue),
      meanReconcileMs: mean(metrics, "controller_runtime_reconcile_time_seconds", cep),
      budgetWaitSeconds: counterTotal(metrics, "neon_cloud_operator_platform_budget_wait_seconds_sum"),
      rssAtStartBytes: before?.rssBytes ?? 0,
    };
  } finally {
    await operator.stop();
    await watch.stop();
    await emulator.close();
  }
}
