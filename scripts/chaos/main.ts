// `npm run chaos` / `npm run chaos:quick`: seeded, repeatable fault campaigns
// against the operator running as separate processes, a real API server and
// the platform emulator. Ends by checking the invariants (one line each, with
// counts), writes docs/reliability.md, and exits non-zero on any failure.
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import * as prettier from "prettier";
import { credentialsGrant } from "../../src/api/grant.ts";
import { credentialsSecretLabels, secretKind } from "../../src/controllers/managed/credentials.ts";
import { credentialsGrantResource } from "../../src/controllers/access/grants.ts";
import {
  baseline,
  chaosGrantLabel,
  cutOff,
  shards,
  kills,
  kubernetesFaults,
  leadership,
  platformFaultsCampaign,
  statusWiped,
  type CampaignResult,
  type Chaos,
  type Mode,
} from "./campaigns.ts";
import { startCluster } from "./cluster.ts";
import {
  checkEndpoints,
  checkKeys,
  checkLogs,
  converge,
  KeyValues,
  type InvariantResult,
} from "./invariants.ts";
import { Operators } from "./operators.ts";
import { recreated } from "./recreate.ts";
import { startPlatform } from "./platform.ts";
import { Random } from "./random.ts";
import { invariantLine, renderReliability } from "./report.ts";
import { BranchPool, persist } from "./workload.ts";

const exec = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, "..", "..");

const usage = `Usage: npm run chaos -- [options]   (npm run chaos:quick for the CI form)

Seeded fault campaigns against the operator (separate processes), a local
Kubernetes API server and the platform emulator: a fault-free baseline, kill -9
of the operator, API server restarts and watch cuts, platform faults, killing
the leader of two replicas, cutting the leader off from the API server without
killing it, two shards by label with resources moved between them and shards
killed, and wiping every resource's status (a restore without status).
Then the invariants, one line each.

Options:
  --seed N        seed of every random choice (default: from the clock; printed)
  --quick         the CI form: about 18 kills, a few minutes
  --kills N       kill -9 count of the kills campaign (default 200, quick 18)
  --flows N       flows of each other campaign (default 60, quick 18)
  --only LIST     comma-separated campaigns to run after the baseline
                  (kills,kubernetes,platform,leadership,cutoff,shards,restore; and
                  recreate, a restore with new UIDs, which runs only when named)
  --out FILE      where to write the report (default docs/reliability.md; "-" for none)
  --keep          keep the work directory (logs, control plane state)
  -h, --help      this help
`;

function modeFrom(values: { quick?: boolean; kills?: string; flows?: string }): Mode {
  const quick = values.quick ?? false;
  const kills = Number(values.kills ?? (quick ? 18 : 200));
  const flows = Number(values.flows ?? (quick ? 18 : 60));
  return {
    name: quick ? "quick" : "full",
    kills,
    flows,
    leaderKills: Math.max(1, Math.round(flows / 9)),
    convergeTimeoutMs: quick ? 180_000 : 300_000,
    freezes: !quick,
  };
}

async function versions(kubernetes: string): Promise<Record<string, string>> {
  const pkg = JSON.parse(await readFile(join(repoRoot, "package.json"), "utf8")) as { version: string };
  // A run from an exported copy of a commit (no .git) names it through NEON_CHAOS_COMMIT.
  let commit = process.env.NEON_CHAOS_COMMIT;
  try {
    commit ??= (await exec("git", ["rev-parse", "--short", "HEAD"], { cwd: repoRoot })).stdout.trim();
  } catch {
    commit = "unknown"; // not a checkout
  }
  return {
    "neon-cloud-operator": `${pkg.version} (${commit}, with uncommitted changes if any)`,
    node: process.version,
    kubernetes,
  };
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: "string" },
      quick: { type: "boolean" },
      kills: { type: "string" },
      flows: { type: "string" },
      only: { type: "string" },
      out: { type: "string" },
      keep: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const seed = Number(values.seed ?? Date.now() % 1_000_000);
  if (!Number.isInteger(seed)) throw new Error(`--seed must be an integer, got ${values.seed}`);
  const mode = modeFrom(values);
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const startedAt = new Date();
  say(`chaos: seed ${seed}, mode ${mode.name} (${mode.kills} kills, ${mode.flows} flows per campaign)`);

  const random = new Random(seed);
  const workDir = await mkdtemp(join(tmpdir(), `neon-chaos-${seed}-`));
  const logDir = join(workDir, "logs");
  await mkdir(logDir);
  say(`chaos: logs and state in ${workDir}`);
  const cleanups: (() => Promise<void>)[] = [];
  let keep = values.keep ?? false;
  try {
    const cluster = await startCluster(join(workDir, "controlplane"), join(workDir, "controlplane.log"));
    cleanups.push(() => cluster.stop());
    const kubectl = (args: string[]) =>
      exec(cluster.binaries.kubectl, args, { env: { ...process.env, KUBECONFIG: cluster.kubeconfig } });
    await kubectl(["apply", "--server-side", "-f", join(repoRoot, "crds")]);
    await kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);

    // Enough empty branches for every create and move of the run.
    const branchesNeeded = 2 * (mode.kills + 4 * mode.flows) + 40;
    const projects = 4;
    const platform = await startPlatform({
      random,
      projects,
      branchesPerProject: Math.ceil(branchesNeeded / projects),
      stateFile: join(workDir, "emulator-state.json"),
      operationDurationMs: 500,
    });
    cleanups.push(() => platform.close());

    const operatorNamespace = "neon-chaos";
    const kube = cluster.kube;
    await persist("namespace", async () => {
      const kind = { group: "", version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false };
      if (!(await kube.get(kind, undefined, operatorNamespace))) {
        await kube.create(kind, {
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: operatorNamespace },
        });
      }
    });
    // The bootstrap key goes into the credentials Secret; it is never printed.
    await kube.create(secretKind, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "neon-api-key", namespace: operatorNamespace, labels: credentialsSecretLabels },
      stringData: { apiKey: platform.emulator.bootstrapKey },
    } as never);
    // The cluster administrator grants the campaigns' namespaces the operator's key (by a label),
    // as a platform team grants its teams' namespaces.
    const grant = credentialsGrant("chaos", {
      namespaceSelector: { matchLabels: { [chaosGrantLabel]: "granted" } },
      projects: ["*"],
      mintApiKeys: true,
    });
    await persist("grant", () => kube.apply(credentialsGrantResource, grant, "chaos"));

    const operators = new Operators({
      kubeconfig: cluster.operatorKubeconfig,
      platformUrl: platform.emulator.url,
      credentialsSecret: `${operatorNamespace}/neon-api-key`,
      leaseNamespace: operatorNamespace,
      logDir,
    });
    cleanups.push(() => operators.stopAll());
    // Interrupted: no operator may outlive us (the control plane exits when our stdin pipe closes).
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      process.once(signal, () => {
        for (const proc of operators.running) proc.child.kill("SIGKILL");
        process.exit(130);
      });
    }
    const keyValues = new KeyValues(kube);
    keyValues.start();
    cleanups.push(() => {
      keyValues.stop();
      return Promise.resolve();
    });

    const ctx: Chaos = {
      random,
      kube,
      cluster,
      platform,
      operators,
      branches: new BranchPool(platform.branches),
      mode,
      operatorNamespace,
      workloads: [],
      single: undefined,
      replaceSingle: (old, fresh) => {
        if (ctx.single === old) ctx.single = fresh;
      },
      say,
    };
    operators.onReplaced = ctx.replaceSingle;
    const campaigns: CampaignResult[] = [];
    const only = values.only?.split(",").map((s) => s.trim());
    const run = async (name: string, fn: (c: Chaos) => Promise<CampaignResult>, optIn = false) => {
      if (name !== "baseline" && (only || optIn) && !only?.includes(name)) return;
      const result = await fn(ctx);
      campaigns.push(result);
      for (const line of result.invariants.map(invariantLine)) say(`${result.name}: ${line}`);
    };
    await run("baseline", baseline);
    await run("kills", kills);
    await run("kubernetes", kubernetesFaults);
    await run("platform", platformFaultsCampaign);
    await run("leadership", leadership);
    await run("cutoff", cutOff);
    await run("shards", shards);
    await run("restore", statusWiped);
    await run("recreate", recreated, true);

    // Platform requests per flow against the fault-free run of the same workload.
    const base = campaigns[0]!;
    const basePerWork = base.requests / Math.max(1, base.work);
    const ratios = campaigns.slice(1).map((c) => ({
      name: c.name,
      ratio: c.requests / Math.max(1, c.work) / Math.max(1e-9, basePerWork),
    }));
    const requestCheck: InvariantResult = {
      name: "platform requests stay within 3x the fault-free run",
      pass: ratios.every((r) => r.ratio <= 3),
      counts: `baseline ${basePerWork.toFixed(1)} requests per unit of work (a flow or a key issued); ${ratios.map((r) => `${r.name} ${r.ratio.toFixed(2)}x`).join(", ")}`,
      problems: ratios.filter((r) => r.ratio > 3).map((r) => `${r.name}: ${r.ratio.toFixed(2)}x`),
    };

    // The end of the run: everything deleted, and nothing may remain on the platform.
    say("\n== teardown: every resource deleted");
    await keyValues.collect();
    for (const w of ctx.workloads) await w.deleteAll();
    const teardown = await converge(kube, platform, ctx.workloads, mode.convergeTimeoutMs);
    teardown.result.name = "teardown: every deleted resource is gone";
    const final: InvariantResult[] = [
      teardown.result,
      ...(await checkEndpoints(kube, platform, ctx.workloads)),
      ...(await checkKeys(kube, platform, ctx.workloads)),
      requestCheck,
    ];
    await operators.stopAll();
    keyValues.stop();
    const known = new Set([...keyValues.values, platform.emulator.bootstrapKey]);
    final.push(await checkLogs(operators.logFiles, known, await platform.keyDigests()));
    final.push({
      name: "no operator process exits on its own",
      pass: operators.crashes.length === 0,
      counts: `${operators.logFiles.length} processes started, ${operators.kills} killed on purpose, ${operators.crashes.length} crashed (and were restarted, as a kubelet would)`,
      problems: operators.crashes.map((c) => `${c.name} (${c.logFile}): ${c.error}`),
    });

    say("\n== invariants (end of run)");
    for (const line of final.map(invariantLine)) say(line);
    for (const r of [...campaigns.flatMap((c) => c.invariants), ...final].filter((i) => !i.pass)) {
      for (const p of r.problems.slice(0, 20)) say(`  ${r.name}: ${p}`);
    }
    const failed = [...campaigns.flatMap((c) => c.invariants), ...final].some((r) => !r.pass);
    say(
      `\nchaos: seed ${seed}, ${operators.kills} kill -9 in all, ${failed ? "FAILED" : "every invariant held"}`,
    );

    const out = values.out ?? join(repoRoot, "docs", "reliability.md");
    if (out !== "-") {
      const markdown = renderReliability({
        seed,
        mode: mode.name,
        startedAt,
        durationMs: Date.now() - startedAt.getTime(),
        versions: await versions(cluster.version),
        campaigns,
        final,
        workDir,
      });
      // Formatted as the repository's prettier would, so `npm run format:check` stays clean.
      const options = (await prettier.resolveConfig(out)) ?? {};
      await writeFile(out, await prettier.format(markdown, { ...options, parser: "markdown" }));
      say(`chaos: wrote ${out}`);
    }
    keep ||= failed;
    if (failed) say(`chaos: kept ${workDir} (logs of every operator process) for the failures above`);
    return failed ? 1 : 0;
  } catch (err) {
    // A campaign that could not go on (an operator that died while starting, say): keep its logs.
    keep = true;
    say(`chaos: kept ${workDir} (logs of every operator process) for the error below`);
    throw err;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    if (!keep) await rm(workDir, { recursive: true, force: true });
  }
}

process.exitCode = await main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`chaos: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return 2;
});
