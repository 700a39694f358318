// `npm run bench:projects` / `npm run bench:projects -- --quick`: a database per tenant at scale.
// N Projects, each creating its platform project and writing its connection Secret (the default
// branch's read-write endpoint), applied at once against a real local API server and the emulator
// (rate limits on, the platform's project-wide lock); measured from apply until every Project is
// Ready and every Secret written. Prints the figures and writes them to the "Projects" section of
// docs/performance.md (the rest of the page is kept).
import { join } from "node:path";
import { parseArgs } from "node:util";
import { projectResourceKind } from "../../src/controllers/project/index.ts";
import { firstBurst, PLATFORM_RATE_LIMITS } from "../../src/platform/budget.ts";
import { KubeClient } from "../../src/runtime/index.ts";
import { startEmulator } from "../../tools/emulator/index.ts";
import { asRun, drawFlags, flagReader, runInLab, say, sharedOptions, sharedUsage } from "./cli.ts";
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

const usage = `Usage: node scripts/bench/projects.ts [--quick] [options]

  --quick            20 Projects (full: 200)
  --projects N       Projects, each with its connection Secret
${sharedUsage}`;

const { values } = parseArgs({
  options: {
    ...sharedOptions,
    quick: { type: "boolean", default: false },
    projects: { type: "string" },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}
const { positive } = flagReader("bench:projects", usage);
const projects = positive(values.projects, values.quick ? 20 : 200, "projects");
const { operationMs, jitter, randomSeed } = drawFlags("bench:projects", usage, values);

const namespace = "bench-projects";
/** The requests a project cannot do without: its create, and an operations list seeing it done. */
const essentialPerProject = 2;
const { perMinute } = PLATFORM_RATE_LIMITS;
/** The operator's first burst (its pacing bucket starts full: budget.ts). */
const burst = firstBurst(perMinute);

const manifests = Array.from({ length: projects }, (_, i) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "Project",
  metadata: { name: `tenant-${i}`, namespace },
  spec: { connectionSecret: { name: `tenant-${i}-db` } },
}));

await runInLab(
  "bench:projects",
  {
    prefix: "neon-bench-projects-",
    keep: values.keep || values.trace,
    intro: (workDir) => `bench:projects: ${projects} Projects; work directory ${workDir}`,
  },
  async (lab, workDir) => {
    const emulator = await startEmulator({
      // An account whose plan allows the projects (the scale plan's 1000 unless more are asked for).
      seed: { limits: { plan: "scale", max_projects: Math.max(1000, projects) }, projects: [] },
      operationDurationMs: operationMs,
      operationDurationJitter: jitter,
      randomSeed,
      lockScope: "project",
      requestLogSize: values.trace ? 20_000 : 0,
      // The platform's URIs name the endpoint's host; the emulator's local Postgres would name
      // loopback ports instead (as in bench:branches).
      postgres: false,
    });
    const { watch, operator } = await operatorInNamespace(lab, {
      namespace,
      apiKey: emulator.bootstrapKey,
      platformUrl: emulator.url,
      logFile: join(workDir, "operator.log"),
      watched: projectResourceKind,
    });
    const secrets = watchSecrets(new KubeClient(lab.adminKubeConfig), namespace, "Project");
    secrets.informer.start();
    await secrets.informer.waitForSync();
    try {
      const started = Date.now();
      await applyAll(lab, workDir, "projects.yaml", manifests);
      const timeoutMs = 600_000;
      const done = () => watch.ready >= projects && secrets.written.size >= projects;
      const progress = setInterval(
        () =>
          say(
            `  ${watch.ready}/${projects} Ready, ${secrets.written.size} Secrets after ${Math.round((Date.now() - started) / 1000)} s`,
          ),
        15_000,
      );
      while (!done() && Date.now() - started < timeoutMs) {
        if (operator.sample() === undefined) throw new Error("the operator process ended");
        await new Promise((resume) => setTimeout(resume, 100));
      }
      clearInterval(progress);
      // A tenant is done when its Project is Ready and its Secret written, whichever came last.
      const doneAt = manifests.map((m) => {
        const ready = watch.tracked.get(m.metadata.name)?.readyAt;
        const written = secrets.written.get(m.spec.connectionSecret.name);
        return ready === undefined || written === undefined ? undefined : Math.max(ready, written) - started;
      });
      const times = doneAt.filter((t): t is number => t !== undefined);
      const allMs = done() ? Math.max(...times) : undefined;
      const counters = emulator.requestLog.counters();
      const drawn = await drawnByProject(emulator.adminUrl);
      // Floors. The rate budget: the operator paces its requests at the platform's 700 a minute,
      // after its first burst (its pacing bucket starts full: `firstBurst`), so the two requests
      // each project cannot do without take at least (2N - burst)/700 minutes,
      // whatever the order: its create (whose answer carries the owner's connection URI, the
      // Secret's password), and one operations list that sees its create_timeline and
      // start_compute finished (a project is Ready only then). The operations: each project's run
      // one after another (the project's lock), as the emulator drew them; the busiest project's
      // sum. Projects do not share a lock, so that floor does not grow with N.
      const rateFloorMs = (Math.max(0, projects * essentialPerProject - burst) / perMinute) * 60_000;
      const operationsFloorMs = Math.max(0, ...drawn);
      const floorMs = Math.max(rateFloorMs, operationsFloorMs);
      const byRoute = counters.by_route;
      const status = (code: string) => withStatus(byRoute, code);
      const creates = answered(byRoute, "POST /projects", "201");
      const lists = sum(Object.values(byRoute["GET /projects/:project_id/operations"] ?? {}));
      const passwords = sum(Object.values(byRoute["GET /projects/:project_id/connection_uri"] ?? {}));
      const others = counters.total - creates - lists - passwords - status("423") - status("429");
      const lines = [
        "## Projects",
        "",
        `\`${asRun("bench:projects")}\`: ${projects} Projects (a database per tenant: ` +
          "each creates its project and writes the connection Secret of its default branch's read-write endpoint), " +
          "applied at once by one operator; the emulator's project-wide lock, rate limits on, its URIs in the platform's form (no local Postgres), " +
          `operations of ${operationMs} ms ± ${Math.round(jitter * 100)}% (seed ${randomSeed}); run ${new Date(started).toISOString()}.`,
        "",
        "| Figure | Value | Target |",
        "| --- | --- | --- |",
        `| every Project Ready with its connection Secret | ${allMs === undefined ? `not all (${watch.ready} Ready, ${secrets.written.size} Secrets) within ${timeoutMs / 1000} s` : fmt(allMs)} | |`,
        `| floor: rate budget (${essentialPerProject} requests a project, its create and one operations list, at ${perMinute}/min after a burst of ${burst}) | ${fmt(rateFloorMs)} | |`,
        `| floor: operations (busiest project's drawn operations in a row) | ${fmt(operationsFloorMs)} | |`,
        `| time ÷ floor | ${allMs === undefined ? "–" : `${(allMs / floorMs).toFixed(2)}×`} | ≤ 1.3× |`,
        `| platform requests per project | ${(counters.total / projects).toFixed(2)} (${counters.total} in all) | ≤ 2.5 |`,
        `| of which: creates / operations lists / password reads / 423s / 429s / others | ${creates} / ${lists} / ${passwords} / ${status("423")} / ${status("429")} / ${others} | |`,
        `| 429s | ${status("429")} | 0 |`,
        `| Ready with its Secret, p50 / p99 after apply | ${fmt(percentile(times, 50))} / ${fmt(percentile(times, 99))} | |`,
        `| Projects Ready / Secrets written | ${watch.ready} / ${secrets.written.size} of ${projects} | |`,
        "",
        "Requests by route:",
        "",
        ...routeTable(byRoute),
        "",
        'What keeps the count down (docs/project.md, "Platform requests"): the create\'s answer carries the owner ' +
          "role's connection URI, which the client holds for the Secret's first read (no `connection_uri`), and the " +
          "project as the create answered it serves the looks that follow within the observe age (no `GET /projects/{id}`); " +
          "each project's `create_timeline` and `start_compute` are confirmed by one operations list, not sent before " +
          "they are due to have ended. Projects share no lock, so each one's list is its own: two requests a project is the floor.",
        "",
      ];
      if (values.trace)
        await writeTrace("bench:projects", join(workDir, "trace.tsv"), emulator.requestLog.latest(), started);
      await reportSection("bench:projects", lines.join("\n"), values);
    } finally {
      await operator.stop();
      await watch.stop();
      await secrets.informer.stop();
      await emulator.close();
    }
  },
);
