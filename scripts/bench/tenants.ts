// `npm run bench:tenants` / `npm run bench:tenants -- --quick`: a database per tenant, at rest. N
// projects on one account (a pre-filled platform), adopted by N Project resources (`spec.projectId`)
// that each keep a setting (`historyRetention`) and write their connection Secret; once all are
// Ready with their Secrets, a window of idle state spanning two resyncs (the resync shortened so the
// window is short; figures are scaled to the default), in which one project's setting is changed on
// the platform as the console would and the time until the operator sets it back is taken. Prints
// the figures and writes the "Tenants at rest" section of docs/performance.md.
import { join } from "node:path";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { projectResourceKind } from "../../src/controllers/project/index.ts";
import { PLATFORM_RATE_LIMITS } from "../../src/platform/budget.ts";
import { KubeClient } from "../../src/runtime/index.ts";
import { startEmulator } from "../../tools/emulator/index.ts";
import { flagReader, runInLab, say, sharedOptions, sharedUsage } from "./cli.ts";
import { counterTotal, operatorInNamespace } from "./operator-process.ts";
import { reportSection } from "./page.ts";
import {
  fmt,
  routeTable,
  watchSecrets,
  withStatus,
  requestTotal,
  requestsSince,
} from "./platform-figures.ts";
import { untilReady } from "./watch.ts";
import { applyAll } from "./workload.ts";

const usage = `Usage: node scripts/bench/tenants.ts [--quick] [options]

  --quick            500 tenants, resync 20 s (full: 10000, resync 60 s)
  --tenants N        projects on the account, each adopted by a Project with its Secret
  --resync S         the operator's resync period during the window (seconds)
${sharedUsage}`;

const { values } = parseArgs({
  options: {
    ...sharedOptions,
    quick: { type: "boolean", default: false },
    tenants: { type: "string" },
    resync: { type: "string" },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}
const { positive } = flagReader("bench:tenants", usage);
const tenants = positive(values.tenants, values.quick ? 500 : 10_000, "tenants");
const resyncMs = positive(values.resync, values.quick ? 20 : 60, "resync") * 1000;
const defaultResyncMs = 600_000;
const windowMs = 2 * resyncMs;
const namespace = "bench-tenants";
const { perMinute } = PLATFORM_RATE_LIMITS;
/** The flags of this run, as the section's first line repeats them. */
const flags = [
  ...(values.quick ? ["--quick"] : []),
  ...(values.tenants ? [`--tenants ${values.tenants}`] : []),
  ...(values.resync ? [`--resync ${values.resync}`] : []),
];
const command = flags.length > 0 ? ` -- ${flags.join(" ")}` : "";
/** The setting each Project keeps: the platform's default, so adoption changes nothing. */
const retention = { spec: "24h", seconds: 86_400, drifted: 3_600 };

await runInLab(
  "bench:tenants",
  {
    prefix: "neon-bench-tenants-",
    keep: values.keep,
    intro: (workDir) => `bench:tenants: ${tenants} tenants at rest; work directory ${workDir}`,
  },
  async (lab, workDir) => {
    const ids = Array.from({ length: tenants }, (_, i) => `tenant-${i}`);
    const emulator = await startEmulator({
      seed: {
        limits: { plan: "scale", max_projects: Math.max(1000, tenants) },
        projects: ids.map((id) => ({ id, name: id, history_retention_seconds: retention.seconds })),
      },
      requestLogSize: 2_000,
      postgres: false,
    });
    const { watch, operator } = await operatorInNamespace(lab, {
      namespace,
      apiKey: emulator.bootstrapKey,
      platformUrl: emulator.url,
      logFile: join(workDir, "operator.log"),
      watched: projectResourceKind,
      flags: [`--resync-period=${resyncMs / 1000}s`],
    });
    const secrets = watchSecrets(new KubeClient(lab.adminKubeConfig), namespace, "Project");
    secrets.informer.start();
    await secrets.informer.waitForSync();
    const manifests = ids.map((id) => ({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Project",
      metadata: { name: id, namespace },
      spec: { projectId: id, historyRetention: retention.spec, connectionSecret: { name: `${id}-db` } },
    }));
    try {
      say(`  tenants: applying ${tenants} Projects that adopt their projects`);
      const started = Date.now();
      const adoptBefore = emulator.requestLog.counters().by_route;
      await applyAll(lab, workDir, "tenants.yaml", manifests);
      const timeoutMs = Math.max(600_000, (tenants / perMinute) * 60_000 * 3);
      const { timedOut } = await untilReady(watch, tenants, operator, timeoutMs, (ready, seconds) =>
        say(`  tenants: ${ready}/${tenants} Ready, ${secrets.written.size} Secrets after ${seconds} s`),
      );
      while (!timedOut && secrets.written.size < tenants && Date.now() - started < timeoutMs)
        await sleep(200);
      const adoptMs = timedOut || secrets.written.size < tenants ? undefined : Date.now() - started;
      const adoption = requestsSince(adoptBefore, emulator.requestLog.counters().by_route);
      // Let the adoption wave leave the queue before measuring the idle state.
      await sleep(Math.min(resyncMs, 10_000));

      say(
        `  tenants: measuring ${windowMs / 1000} s at rest (resync ${resyncMs / 1000} s), one drift injected`,
      );
      const before = emulator.requestLog.counters().by_route;
      const cpuBefore = operator.sample()?.cpuSeconds ?? 0;
      let rss = 0;
      const windowEnd = Date.now() + windowMs;
      // A setting changed as the console would, a third into the window.
      await sleep(windowMs / 3);
      const drifted = ids[Math.floor(tenants / 2)]!;
      const driftAt = Date.now();
      const patched = await fetch(`${emulator.url}/projects/${drifted}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${emulator.bootstrapKey}`, "content-type": "application/json" },
        body: JSON.stringify({ project: { history_retention_seconds: retention.drifted } }),
      });
      if (!patched.ok) throw new Error(`the drift's PATCH answered ${patched.status}`);
      await patched.arrayBuffer();
      let repairedMs: number | undefined;
      while (Date.now() < windowEnd) {
        rss = Math.max(rss, operator.sample()?.rssBytes ?? 0);
        if (repairedMs === undefined) {
          // The operator's PATCH of that project after the bench's own.
          const repairs = emulator.requestLog
            .latest()
            .filter(
              (e) =>
                e.method === "PATCH" &&
                e.path.endsWith(`/projects/${drifted}`) &&
                e.status === 200 &&
                Date.parse(e.time) > driftAt,
            );
          if (repairs.length >= 2) repairedMs = Date.parse(repairs[1]!.time) - driftAt;
        }
        await sleep(500);
      }
      const window = requestsSince(before, emulator.requestLog.counters().by_route);
      // The bench's own PATCH is not the operator's.
      const operatorRequests = requestTotal(window) - 1;
      const sample = operator.sample();
      const metrics = await operator.metrics();
      const heapUsed = counterTotal(metrics, "nodejs_heap_size_used_bytes");
      const cpu = (sample?.cpuSeconds ?? 0) - cpuBefore;
      const perMinuteMeasured = operatorRequests / (windowMs / 60_000);
      const perMinuteDefault = perMinuteMeasured * (resyncMs / defaultResyncMs);
      const mb = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;
      const lines = [
        "## Tenants at rest",
        "",
        `\`npm run bench:tenants${command}\`: ${tenants} projects on one account, adopted by as many Projects ` +
          `(\`spec.projectId\`, \`historyRetention: ${retention.spec}\`, a connection Secret each); then ${windowMs / 1000} s at rest with the resync ` +
          `shortened to ${resyncMs / 1000} s (two resyncs), one project's history retention changed on the platform a third into it. ` +
          `"At the default resync" scales the per-minute figure by ${resyncMs / 1000} s / ${defaultResyncMs / 1000} s. Rate limits on, no local Postgres; ` +
          `run ${new Date(started).toISOString()}.`,
        "",
        "| Figure | Value | Target |",
        "| --- | --- | --- |",
        `| Adoption: every Project Ready with its Secret | ${adoptMs === undefined ? `not all (${watch.ready} Ready, ${secrets.written.size} Secrets)` : fmt(adoptMs)} | |`,
        `| Adoption: platform requests per tenant | ${(requestTotal(adoption) / tenants).toFixed(2)} (${requestTotal(adoption)} in all) | |`,
        `| At rest: platform requests a minute, resync ${resyncMs / 1000} s (measured) | ${perMinuteMeasured.toFixed(1)} | |`,
        `| At rest: platform requests a minute at the default resync (scaled) | ${perMinuteDefault.toFixed(1)} (${((perMinuteDefault / perMinute) * 100).toFixed(1)}% of ${perMinute}) | ≤ 10% |`,
        `| A drifted setting set back, after the change on the platform | ${repairedMs === undefined ? "not within the window" : fmt(repairedMs)} | ≤ one resync (${resyncMs / 1000} s) |`,
        `| 429s (adoption and window) | ${withStatus(adoption, "429") + withStatus(window, "429")} | 0 |`,
        `| Operator RSS, max in the window / peak of the run | ${mb(rss)} / ${mb(sample?.peakRssBytes ?? 0)} | ≤ 256 MiB (the chart's limit) |`,
        `| Operator V8 heap used at the end | ${mb(heapUsed)} | |`,
        `| Operator CPU per minute at rest (resync ${resyncMs / 1000} s) | ${(cpu / (windowMs / 60_000)).toFixed(2)} s | |`,
        "",
        "Requests at rest by route (the bench's own PATCH included):",
        "",
        ...routeTable(window),
        "",
        "Requests of the adoption by route:",
        "",
        ...routeTable(adoption),
        "",
      ];
      await reportSection("bench:tenants", lines.join("\n"), values);
    } finally {
      await operator.stop();
      await watch.stop();
      await secrets.informer.stop();
      await emulator.close();
    }
  },
);
