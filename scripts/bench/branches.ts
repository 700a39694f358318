// `npm run bench:branches` / `npm run bench:branches -- --quick`: preview environments at scale.
// N Branches (from each project's default branch), each with one ComputeEndpoint naming it by
// `branchRef` and writing a connection Secret, over P projects, applied at once against a real
// local API server and the emulator (rate limits on, the platform's project-wide lock); measured
// from apply until every connection Secret is written. Prints the figures and writes them to the
// "Branches and connection Secrets" section of docs/performance.md (the rest of the page is kept).
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startEmulator } from "../../tools/emulator/index.ts";
import { KubeClient } from "../../src/runtime/index.ts";
import { drawFlags, flagReader, runInLab, say, sharedOptions, sharedUsage } from "./cli.ts";
import { operatorInNamespace } from "./operator-process.ts";
import { reportSection } from "./page.ts";
import {
  answered,
  drawnByProject,
  fmt,
  routeTable,
  watchSecrets,
  withStatus,
  writeTrace,
} from "./platform-figures.ts";
import { percentile, sum } from "./stats.ts";
import { applyAll } from "./workload.ts";

const usage = `Usage: node scripts/bench/branches.ts [--quick] [options]

  --quick            20 Branches over 2 projects (full: 100 over 5)
  --branches N       Branches, each with one ComputeEndpoint and its connection Secret
  --projects N       projects they are spread over
${sharedUsage}`;

const { values } = parseArgs({
  options: {
    ...sharedOptions,
    quick: { type: "boolean", default: false },
    branches: { type: "string" },
    projects: { type: "string" },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}
const { positive } = flagReader("bench:branches", usage);
const branches = positive(values.branches, values.quick ? 20 : 100, "branches");
const projects = positive(values.projects, values.quick ? 2 : 5, "projects");
const { operationMs, jitter, randomSeed } = drawFlags("bench:branches", usage, values);

const namespace = "bench-branches";
const role = "neondb_owner";
const database = "neondb";

interface Placement {
  name: string;
  projectId: string;
}

const placements: Placement[] = Array.from({ length: branches }, (_, i) => ({
  name: `pr-${i}`,
  projectId: `bench-p${i % projects}`,
}));
const projectIds = [...new Set(placements.map((p) => p.projectId))];

function manifests(p: Placement): Record<string, unknown>[] {
  return [
    {
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Branch",
      metadata: { name: p.name, namespace },
      spec: { projectId: p.projectId },
    },
    {
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "ComputeEndpoint",
      metadata: { name: p.name, namespace },
      spec: {
        projectId: p.projectId,
        branchRef: { name: p.name },
        connectionSecret: { name: `${p.name}-db`, role, database },
      },
    },
  ];
}

await runInLab(
  "bench:branches",
  {
    prefix: "neon-bench-branches-",
    keep: values.keep || values.trace,
    intro: (workDir) =>
      `bench:branches: ${branches} Branches over ${projects} projects; work directory ${workDir}`,
  },
  async (lab, workDir) => {
    const emulator = await startEmulator({
      seed: { projects: projectIds.map((id) => ({ id, name: id })) },
      operationDurationMs: operationMs,
      operationDurationJitter: jitter,
      randomSeed,
      lockScope: "project",
      // Counting needs no log; a trace keeps every request (a full run makes under a thousand).
      requestLogSize: values.trace ? 20_000 : 0,
      // The platform's URIs name the endpoint's host (the pooled one derived from it); the
      // emulator's local Postgres would name loopback ports instead and cost a second URI request.
      postgres: false,
    });
    const { watch, operator } = await operatorInNamespace(lab, {
      namespace,
      apiKey: emulator.bootstrapKey,
      platformUrl: emulator.url,
      logFile: join(workDir, "operator.log"),
    });
    const secrets = watchSecrets(new KubeClient(lab.adminKubeConfig), namespace, "ComputeEndpoint");
    secrets.informer.start();
    await secrets.informer.waitForSync();
    try {
      const started = Date.now();
      await applyAll(lab, workDir, "branches.yaml", placements.flatMap(manifests));
      const timeoutMs = 600_000;
      const progress = setInterval(
        () =>
          say(
            `  ${secrets.written.size}/${branches} Secrets after ${Math.round((Date.now() - started) / 1000)} s`,
          ),
        15_000,
      );
      while (secrets.written.size < branches && Date.now() - started < timeoutMs) {
        if (operator.sample() === undefined) throw new Error("the operator process ended");
        await new Promise((done) => setTimeout(done, 100));
      }
      clearInterval(progress);
      const times = [...secrets.written.values()].map((t) => t - started);
      const allMs = secrets.written.size >= branches ? Math.max(...times) : undefined;
      const counters = emulator.requestLog.counters();
      const drawn = await drawnByProject(emulator.adminUrl);
      // Floors: the rate budget (4 requests a branch at 700 a minute, plus one operation), and the
      // project-wide lock (the busiest project's operations one after another, as drawn).
      const rateFloorMs = ((branches * 4) / 700) * 60_000 + operationMs;
      const lockFloorMs = Math.max(0, ...drawn);
      const floorMs = Math.max(rateFloorMs, lockFloorMs);
      const byRoute = counters.by_route;
      const status = (code: string) => withStatus(byRoute, code);
      // Where the requests went: those a branch cannot do without (its create, which makes its
      // endpoint too, an endpoint create where it did not, the password read), the operations lists
      // that confirm, the 423s, and the rest.
      const essential =
        answered(byRoute, "POST /projects/:project_id/branches", "201") +
        answered(byRoute, "POST /projects/:project_id/endpoints", "201") +
        answered(byRoute, "GET /projects/:project_id/connection_uri", "200");
      const lists = sum(Object.values(byRoute["GET /projects/:project_id/operations"] ?? {}));
      const others = counters.total - essential - lists - status("423");
      const lines = [
        "## Branches and connection Secrets",
        "",
        `\`npm run bench:branches${values.quick ? " -- --quick" : ""}\`: ${branches} Branches (from each project's default branch), ` +
          `each with one ComputeEndpoint (\`branchRef\`) writing a connection Secret (role \`${role}\`, database \`${database}\`), ` +
          `over ${projects} projects, applied at once; the emulator's project-wide lock, rate limits on, its URIs in the platform's form (no local Postgres), operations of ` +
          `${operationMs} ms ± ${Math.round(jitter * 100)}% (seed ${randomSeed}); run ${new Date(started).toISOString()}.`,
        "",
        "| Figure | Value | Target |",
        "| --- | --- | --- |",
        `| every connection Secret written | ${allMs === undefined ? `not all (${secrets.written.size}) within ${timeoutMs / 1000} s` : `${(allMs / 1000).toFixed(1)} s`} | |`,
        `| floor: project lock (busiest project's drawn operations in a row) | ${(lockFloorMs / 1000).toFixed(1)} s | |`,
        `| floor: rate budget (4 requests a branch at 700/min, plus one operation) | ${(rateFloorMs / 1000).toFixed(1)} s | |`,
        `| time ÷ floor | ${allMs === undefined ? "–" : `${(allMs / floorMs).toFixed(2)}×`} | ≤ 1.3× |`,
        `| platform requests per branch | ${(counters.total / branches).toFixed(2)} (${counters.total} in all) | ≤ 3 |`,
        `| of which: creates and password reads / operations lists / 423s / others | ${essential} / ${lists} / ${status("423")} / ${others} | |`,
        `| 429s | ${status("429")} | 0 |`,
        `| 423s | ${status("423")} | |`,
        `| Secret written, p50 / p99 after apply | ${fmt(percentile(times, 50))} / ${fmt(percentile(times, 99))} | |`,
        `| ComputeEndpoints Ready | ${watch.ready} / ${branches} | |`,
        "",
        "Requests by route:",
        "",
        ...routeTable(byRoute),
        "",
        "What keeps the count down (docs/platform-client.md): a project's next change goes when 90% of such " +
          "operations have most likely ended (the first few durations' plain mean and spread); an action never seen " +
          "to finish borrows the known ones' time, so only a project's first change is confirmed by operations lists; " +
          "and no list is made for operations not yet due to have ended. Each Branch's create makes its " +
          "ComputeEndpoint's read-write endpoint in the same request (docs/branch.md), so a branch costs its create and " +
          "its password read; an operation of such a chain is learned by its own time, not from the request's start.",
        "",
      ];
      if (values.trace)
        await writeTrace("bench:branches", join(workDir, "trace.tsv"), emulator.requestLog.latest(), started);
      await reportSection("bench:branches", lines.join("\n"), values);
    } finally {
      await operator.stop();
      await watch.stop();
      await secrets.informer.stop();
      await emulator.close();
    }
  },
);
