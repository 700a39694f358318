// `npm run bench:snapshots` / `npm run bench:snapshots -- --quick`: a snapshot of many branches at
// once (a nightly snapshot of every tenant's database, say). N Snapshot resources, each of the root
// branch of its own project (snapshots are taken of root branches only), applied at once against a
// real local API server and the emulator (rate limits on, the platform's project-wide lock);
// measured from apply until every Snapshot is Ready. Prints the figures and writes them to the
// "Snapshots" section of docs/performance.md (the rest of the page is kept).
import { join } from "node:path";
import { parseArgs } from "node:util";
import { snapshotResourceKind } from "../../src/controllers/snapshot/index.ts";
import { firstBurst, PLATFORM_RATE_LIMITS } from "../../src/platform/budget.ts";
import { startEmulator } from "../../tools/emulator/index.ts";
import { asRun, drawFlags, flagReader, runInLab, say, sharedOptions, sharedUsage } from "./cli.ts";
import { operatorInNamespace } from "./operator-process.ts";
import { reportSection } from "./page.ts";
import {
  drawnByProject,
  fmt,
  routeTable,
  withStatus,
  writeTrace,
  requestTotal,
  requestsSince,
} from "./platform-figures.ts";
import { percentile, sum } from "./stats.ts";
import { applyAll } from "./workload.ts";

const usage = `Usage: node scripts/bench/snapshots.ts [--quick] [options]

  --quick            20 Snapshots (full: 100)
  --snapshots N      Snapshots, each of the root branch of a project of its own
${sharedUsage}`;

const { values } = parseArgs({
  options: {
    ...sharedOptions,
    quick: { type: "boolean", default: false },
    snapshots: { type: "string" },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}
const { positive } = flagReader("bench:snapshots", usage);
const snapshots = positive(values.snapshots, values.quick ? 20 : 100, "snapshots");
const { operationMs, jitter, randomSeed } = drawFlags("bench:snapshots", usage, values);

const namespace = "bench-snapshots";
/** The requests a snapshot cannot do without: its create, and an operations list seeing it done. */
const essentialPerSnapshot = 2;
const { perMinute } = PLATFORM_RATE_LIMITS;
/** The operator's first burst (its pacing bucket starts full: budget.ts). */
const burst = firstBurst(perMinute);
const projectIds = Array.from({ length: snapshots }, (_, i) => `bench-s${i}`);

await runInLab(
  "bench:snapshots",
  {
    prefix: "neon-bench-snapshots-",
    keep: values.keep || values.trace,
    intro: (workDir) =>
      `bench:snapshots: ${snapshots} Snapshots of as many root branches; work directory ${workDir}`,
  },
  async (lab, workDir) => {
    const emulator = await startEmulator({
      seed: {
        limits: { plan: "scale", max_projects: Math.max(1000, snapshots) },
        projects: projectIds.map((id) => ({ id, name: id })),
      },
      operationDurationMs: operationMs,
      operationDurationJitter: jitter,
      randomSeed,
      lockScope: "project",
      requestLogSize: values.trace ? 20_000 : 0,
      postgres: false,
    });
    // Each project's root branch, read by the bench before the run (not counted below), one after
    // another and again after a 429: the platform's limits hold for the bench too.
    const roots: { projectId: string; branchId: string }[] = [];
    for (const projectId of projectIds) {
      for (;;) {
        const res = await fetch(`${emulator.url}/projects/${projectId}/branches`, {
          headers: { authorization: `Bearer ${emulator.bootstrapKey}` },
        });
        if (res.status === 429) {
          await res.arrayBuffer();
          await new Promise((resume) => setTimeout(resume, 1000));
          continue;
        }
        const { branches } = (await res.json()) as { branches: { id: string; default: boolean }[] };
        roots.push({ projectId, branchId: branches.find((b) => b.default)?.id ?? "" });
        break;
      }
    }
    const manifests = roots.map((r, i) => ({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Snapshot",
      metadata: { name: `nightly-${i}`, namespace },
      spec: { projectId: r.projectId, branchId: r.branchId, ttl: "168h" },
    }));
    const { watch, operator } = await operatorInNamespace(lab, {
      namespace,
      apiKey: emulator.bootstrapKey,
      platformUrl: emulator.url,
      logFile: join(workDir, "operator.log"),
      watched: snapshotResourceKind,
    });
    try {
      const before = emulator.requestLog.counters().by_route;
      const started = Date.now();
      await applyAll(lab, workDir, "snapshots.yaml", manifests);
      const timeoutMs = 600_000;
      const progress = setInterval(
        () => say(`  ${watch.ready}/${snapshots} Ready after ${Math.round((Date.now() - started) / 1000)} s`),
        15_000,
      );
      while (watch.ready < snapshots && Date.now() - started < timeoutMs) {
        if (operator.sample() === undefined) throw new Error("the operator process ended");
        await new Promise((resume) => setTimeout(resume, 100));
      }
      clearInterval(progress);
      const times = [...watch.tracked.values()]
        .map((t) => t.readyAt)
        .filter((t): t is number => t !== undefined)
        .map((t) => t - started);
      const allMs = watch.ready >= snapshots ? Math.max(...times) : undefined;
      const byRoute = requestsSince(before, emulator.requestLog.counters().by_route);
      const total = requestTotal(byRoute);
      const drawn = await drawnByProject(emulator.adminUrl);
      // Floors. The rate budget: the operator paces its requests at the platform's 700 a minute
      // after its first burst (`firstBurst`), so the two requests a snapshot cannot do without
      // (its create and one operations list that sees its operation end) take at least
      // (2N - burst)/700 minutes. The operations: each project's one after another (its lock), the
      // busiest project's sum; every snapshot has a project of its own, so that floor does not grow
      // with N.
      const rateFloorMs = (Math.max(0, snapshots * essentialPerSnapshot - burst) / perMinute) * 60_000;
      const operationsFloorMs = Math.max(0, ...drawn);
      const floorMs = Math.max(rateFloorMs, operationsFloorMs);
      const status = (code: string) => withStatus(byRoute, code);
      const listsOf = (route: string) => sum(Object.values(byRoute[route] ?? {}));
      // The document answers a snapshot's create 200 (not 201); every answer counts.
      const creates = listsOf("POST /projects/:project_id/branches/:branch_id/snapshot");
      const operationLists = listsOf("GET /projects/:project_id/operations");
      const snapshotLists = listsOf("GET /projects/:project_id/snapshots");
      const others = total - creates - operationLists - snapshotLists - status("423") - status("429");
      const lines = [
        "## Snapshots",
        "",
        `\`${asRun("bench:snapshots")}\`: ${snapshots} Snapshots, each of the root branch of a project of its own ` +
          "(`ttl: 168h`), applied at once by one operator; the emulator's project-wide lock, rate limits on, " +
          `operations of ${operationMs} ms ± ${Math.round(jitter * 100)}% (seed ${randomSeed}); run ${new Date(started).toISOString()}.`,
        "",
        "| Figure | Value | Target |",
        "| --- | --- | --- |",
        `| every Snapshot Ready | ${allMs === undefined ? `not all (${watch.ready}) within ${timeoutMs / 1000} s` : fmt(allMs)} | |`,
        `| floor: rate budget (${essentialPerSnapshot} requests a snapshot, its create and one operations list, at ${perMinute}/min after a burst of ${burst}) | ${fmt(rateFloorMs)} | |`,
        `| floor: operations (busiest project's drawn operations in a row) | ${fmt(operationsFloorMs)} | |`,
        `| time ÷ floor | ${allMs === undefined ? "–" : `${(allMs / floorMs).toFixed(2)}×`} | |`,
        `| platform requests per snapshot | ${(total / snapshots).toFixed(2)} (${total} in all) | |`,
        `| of which: creates / snapshot lists / operations lists / 423s / 429s / others | ${creates} / ${snapshotLists} / ${operationLists} / ${status("423")} / ${status("429")} / ${others} | |`,
        `| 429s | ${status("429")} | 0 |`,
        `| Ready, p50 / p99 after apply | ${fmt(percentile(times, 50))} / ${fmt(percentile(times, 99))} | |`,
        "",
        "Requests by route:",
        "",
        ...routeTable(byRoute),
        "",
        "What a snapshot costs (docs/snapshot.md): its create and the operations list that sees its operation end; " +
          "its first look after that is the create's answer, not a list. The project's snapshot list is read before " +
          "a create only when a create may have been sent already (its name recorded first), where a create whose " +
          "answer was lost is found by that name, so a snapshot is never taken twice; later looks (a resync, an " +
          "expiry) read it too. No target was set for this line.",
        "",
      ];
      if (values.trace)
        await writeTrace(
          "bench:snapshots",
          join(workDir, "trace.tsv"),
          emulator.requestLog.latest(),
          started,
        );
      await reportSection("bench:snapshots", lines.join("\n"), values);
    } finally {
      await operator.stop();
      await watch.stop();
      await emulator.close();
    }
  },
);
