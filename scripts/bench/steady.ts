// Steady state: many idle ComputeEndpoints. Creating 10,000 endpoints through
// the operator under the platform's 700 requests/minute would take a quarter of
// an hour, so the platform is filled first by a rate-unlimited emulator writing a
// state file; the measuring emulator (rate limits on) loads that file, and the
// resources adopt their endpoints by id. Then, with nothing to do, the operator's
// platform and Kubernetes traffic, memory, and the delay from a spec change to
// its PATCH on the platform are measured.
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import type { Lab } from "./lab.ts";
import { counterTotal, operatorInNamespace } from "./operator-process.ts";
import { sum } from "./stats.ts";
import { untilReady } from "./watch.ts";
import { applyAll } from "./workload.ts";

export interface SteadyOptions {
  idle: number;
  projects: number;
  operationMs: number;
  /** Resync used for the measurement (shortened; figures are also scaled to the default). */
  resyncMs: number;
  defaultResyncMs: number;
  /** Length of the measuring window. */
  windowMs: number;
  /** How many spec changes to time. */
  changes: number;
  timeoutMs: number;
  workDir: string;
  say: (line: string) => void;
}

export interface SteadyResult {
  idle: number;
  projects: number;
  adoptMs: number | undefined;
  resyncMs: number;
  defaultResyncMs: number;
  windowMs: number;
  platformRequests: number;
  byRoute: Record<string, number>;
  rateLimited: number;
  listsPerProjectPerResync: number;
  kubeRequests: number;
  kubeByVerb: Record<string, number>;
  rssBytes: number;
  peakRssBytes: number;
  /** Where the operator's memory was at the end of the window (its own /metrics). */
  heap: { usedBytes: number; totalBytes: number; externalBytes: number };
  cpuSecondsInWindow: number;
  statusWritesInWindow: number;
  changeLatencies: number[];
  /** The same, counted from the start of `kubectl apply` (kubectl's own start-up included). */
  changeLatenciesFromKubectl: number[];
  changeMisses: number;
}

interface Filled {
  stateFile: string;
  key: string;
  endpoints: { projectId: string; branchId: string; endpointId: string }[];
}

const seedOf = (projects: number) => ({
  projects: Array.from({ length: projects }, (_, p) => ({
    id: `idle-p${p}`,
    name: `idle-p${p}`,
    branches: [{ id: `br-idle-p${p}`, name: "replicas" }],
  })),
});

/** Read replicas that never suspend (so the platform stays quiet), `idle` of them over the projects. */
async function fill(o: SteadyOptions): Promise<Filled> {
  const stateFile = join(o.workDir, "idle-world.json");
  const emulator = await startEmulator({
    seed: seedOf(o.projects),
    stateFile,
    rateLimits: false,
    operationDurationMs: 0,
    requestLogSize: 0,
  });
  const endpoints: Filled["endpoints"] = [];
  await Promise.all(
    Array.from({ length: o.projects }, async (_, p) => {
      const projectId = `idle-p${p}`;
      const branchId = `br-idle-p${p}`;
      for (let i = p; i < o.idle; i += o.projects) {
        for (;;) {
          const res = await fetch(`${emulator.url}/projects/${projectId}/endpoints`, {
            method: "POST",
            headers: { authorization: `Bearer ${emulator.bootstrapKey}`, "content-type": "application/json" },
            body: JSON.stringify({
              endpoint: { branch_id: branchId, type: "read_only", suspend_timeout_seconds: -1 },
            }),
          });
          const body = (await res.json()) as { endpoint?: { id: string } };
          if (res.status === 423) {
            await sleep(1);
            continue;
          }
          if (!res.ok || !body.endpoint) throw new Error(`fill: create answered ${res.status}`);
          endpoints.push({ projectId, branchId, endpointId: body.endpoint.id });
          break;
        }
      }
    }),
  );
  const key = emulator.bootstrapKey;
  await emulator.close();
  return { stateFile, key, endpoints };
}

function routeTotals(emulator: Emulator): Map<string, number> {
  const out = new Map<string, number>();
  for (const [route, byStatus] of Object.entries(emulator.requestLog.counters().by_route)) {
    out.set(route, sum(Object.values(byStatus)));
  }
  return out;
}

function diff(after: Map<string, number>, before: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) out[k] = v - (before.get(k) ?? 0);
  return out;
}

export async function runSteady(lab: Lab, o: SteadyOptions): Promise<SteadyResult> {
  o.say(`  steady: filling the platform with ${o.idle} endpoints over ${o.projects} projects`);
  const filled = await fill(o);
  const emulator = await startEmulator({
    seed: seedOf(o.projects),
    stateFile: filled.stateFile,
    operationDurationMs: o.operationMs,
    requestLogSize: 20_000,
  });
  const namespace = "bench-idle";
  const { watch, operator } = await operatorInNamespace(lab, {
    namespace,
    apiKey: filled.key,
    platformUrl: emulator.url,
    logFile: join(o.workDir, "operator-idle.log"),
    flags: [`--resync-period=${Math.round(o.resyncMs / 1000)}s`],
  });
  const manifests = filled.endpoints.map((e, i) => ({
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name: `idle-${i}`, namespace },
    spec: { projectId: e.projectId, branchId: e.branchId, type: "read_only", endpointId: e.endpointId },
  }));
  try {
    o.say(`  steady: applying ${manifests.length} ComputeEndpoints that adopt them`);
    const started = Date.now();
    await applyAll(lab, o.workDir, "idle.yaml", manifests);
    const { timedOut } = await untilReady(watch, o.idle, operator, o.timeoutMs, (ready, seconds) =>
      o.say(`  steady: ${ready}/${o.idle} Ready after ${seconds} s`),
    );
    const adoptMs = timedOut ? undefined : Date.now() - started;
    // Let the first (adoption) wave leave the queue before measuring the idle state.
    await sleep(Math.min(o.resyncMs, 10_000));

    o.say(
      `  steady: measuring ${Math.round(o.windowMs / 1000)} s of idle state (resync ${o.resyncMs / 1000} s)`,
    );
    const platformBefore = routeTotals(emulator);
    const limitedBefore = emulator.requestLog.counters().rate_limited;
    const kubeBefore = await lab.operatorRequests();
    const verbsBefore = await lab.requestsByVerb();
    const cpuBefore = operator.sample()?.cpuSeconds ?? 0;
    const writes = () => sum([...watch.tracked.values()].map((t) => t.statusWrites));
    const writesBefore = writes();
    let rss = 0;
    const windowEnd = Date.now() + o.windowMs;
    while (Date.now() < windowEnd) {
      rss = Math.max(rss, operator.sample()?.rssBytes ?? 0);
      await sleep(1_000);
    }
    const platform = diff(routeTotals(emulator), platformBefore);
    const kubeRequests = (await lab.operatorRequests()) - kubeBefore;
    const kubeByVerb = diff(await lab.requestsByVerb(), verbsBefore);
    const sample = operator.sample();
    const metrics = await operator.metrics();
    const heap = {
      usedBytes: counterTotal(metrics, "nodejs_heap_size_used_bytes"),
      totalBytes: counterTotal(metrics, "nodejs_heap_size_total_bytes"),
      externalBytes: counterTotal(metrics, "nodejs_external_memory_bytes"),
    };
    const statusWritesInWindow = writes() - writesBefore;
    const lists = platform["GET /projects/:project_id/endpoints"] ?? 0;

    // Spec changes, one per project, one at a time: apply, then find the PATCH in the emulator's log.
    o.say(`  steady: timing ${o.changes} spec changes from apply to PATCH on the platform`);
    const latencies: number[] = [];
    const fromKubectl: number[] = [];
    let misses = 0;
    // One endpoint per project, so no change waits for another's operation (the project lock).
    const firstOfProject = Array.from({ length: o.projects }, (_, p) =>
      filled.endpoints.findIndex((e) => e.projectId === `idle-p${p}`),
    ).filter((i) => i >= 0);
    for (let c = 0; c < Math.min(o.changes, firstOfProject.length); c++) {
      const i = firstOfProject[c]!;
      const m = manifests[i]!;
      const endpointId = filled.endpoints[i]!.endpointId;
      const changed = { ...m, spec: { ...m.spec, autosuspend: "10m" } };
      const generationBefore = Math.max(
        ...(watch.tracked.get(m.metadata.name)?.generationSeenAt.keys() ?? [0]),
      );
      const applyStarted = Date.now();
      await applyAll(lab, o.workDir, `change-${c}.yaml`, [changed]);
      const deadline = Date.now() + 30_000;
      let latency: number | undefined;
      while (Date.now() < deadline && latency === undefined) {
        const seenAt = watch.tracked.get(m.metadata.name)?.generationSeenAt.get(generationBefore + 1);
        const patch = emulator.requestLog
          .latest(2_000)
          .find(
            (e) => e.method === "PATCH" && e.path.endsWith(`/endpoints/${endpointId}`) && e.status === 200,
          );
        if (seenAt !== undefined && patch) {
          latency = Date.parse(patch.time) - seenAt;
          fromKubectl.push(Date.parse(patch.time) - applyStarted);
        } else await sleep(20);
      }
      if (latency === undefined) misses++;
      else latencies.push(latency);
    }
    return {
      idle: o.idle,
      projects: o.projects,
      adoptMs,
      resyncMs: o.resyncMs,
      defaultResyncMs: o.defaultResyncMs,
      windowMs: o.windowMs,
      platformRequests: sum(Object.values(platform)),
      byRoute: platform,
      rateLimited: emulator.requestLog.counters().rate_limited - limitedBefore,
      listsPerProjectPerResync: lists / o.projects / (o.windowMs / o.resyncMs),
      kubeRequests,
      kubeByVerb,
      rssBytes: rss,
      peakRssBytes: sample?.peakRssBytes ?? 0,
      heap,
      cpuSecondsInWindow: (sample?.cpuSeconds ?? 0) - cpuBefore,
      statusWritesInWindow,
      changeLatencies: latencies,
      changeLatenciesFromKubectl: fromKubectl,
      changeMisses: misses,
    };
  } finally {
    await operator.stop();
    await watch.stop();
    await emulator.close();
  }
}
