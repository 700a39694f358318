// The fault campaigns. Each gets a namespace and a workload of its own, drives
// flows at a seeded pace while its faults strike, then stops the faults, waits
// (bounded) for everything to converge and checks the invariants.
import { apiKeyResourceKind } from "../../src/controllers/apikey/index.ts";
import { computeEndpointResourceKind } from "../../src/controllers/computeendpoint/index.ts";
import {
  ContentType,
  leaseKind,
  type KubeClient,
  type KubeObject,
  type ResourceKind,
} from "../../src/runtime/index.ts";
import type { TcpProxy } from "../../test/support/runtime/tcp-proxy.ts";
import type { FaultsConfig } from "../../tools/emulator/faults.ts";
import { BranchFlows } from "./branches.ts";
import type { Cluster } from "./cluster.ts";
import { checkEndpoints, checkKeys, converge, type InvariantResult } from "./invariants.ts";
import type { OperatorProcess, Operators } from "./operators.ts";
import type { ChaosPlatform } from "./platform.ts";
import type { Random } from "./random.ts";
import { Workload, persist, pickFlow, type BranchPool, type FlowKind } from "./workload.ts";

export interface Mode {
  name: "quick" | "full";
  /** kill -9 of the operator in the kills campaign. */
  kills: number;
  /** Flows of each other campaign (the fault-free baseline included). */
  flows: number;
  /** Leader kills in the leadership campaign. */
  leaderKills: number;
  convergeTimeoutMs: number;
  /**
   * Also freeze connections (half-dead paths). The operator notices a silent watch only by its
   * silence watchdog (90 s; 180 s when this was made full mode only, as long as quick mode's bound).
   */
  freezes: boolean;
}

export interface Chaos {
  random: Random;
  kube: KubeClient;
  cluster: Cluster;
  platform: ChaosPlatform;
  operators: Operators;
  branches: BranchPool;
  mode: Mode;
  operatorNamespace: string;
  workloads: Workload[];
  /** The single replica (no leader election) outside the leadership campaign. */
  single: OperatorProcess | undefined;
  /** Follows a crashed single replica's replacement (the default `Operators.onReplaced`). */
  replaceSingle: (old: OperatorProcess, fresh: OperatorProcess) => void;
  say(line: string): void;
}

export interface CampaignResult {
  name: string;
  title: string;
  flows: Partial<Record<FlowKind, number>>;
  flowCount: number;
  /** What the campaign did: kills, restarts, faults... */
  counts: Record<string, number>;
  /** Platform requests the operator made from the first flow until convergence. */
  requests: number;
  /** Those requests by route (`GET /api_keys`), most first. */
  byRoute: [string, number][];
  /** Units of work in that window: flows plus keys issued (rotation goes on with time). */
  work: number;
  durationMs: number;
  invariants: InvariantResult[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The pause between two flows: the same distribution in every campaign, so request counts compare. */
function gap(random: Random): Promise<unknown> {
  return sleep(random.int(300, 1500));
}

/** The label the chaos run's CredentialsGrant selects its campaigns' namespaces by. */
export const chaosGrantLabel = "neoncloud.dev/chaos";

async function ensureNamespace(kube: KubeClient, name: string): Promise<void> {
  const kind = { group: "", version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false };
  await persist(`namespace ${name}`, async () => {
    if (!(await kube.get(kind, undefined, name))) {
      // Labelled for the chaos run's CredentialsGrant (main.ts): its workloads use the operator's key.
      await kube.create(kind, {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name, labels: { [chaosGrantLabel]: "granted" } },
      });
    }
  });
}

async function startSingle(ctx: Chaos): Promise<void> {
  if (ctx.single && ctx.single.child.exitCode === null && ctx.single.child.signalCode === null) return;
  ctx.single = ctx.operators.start(false);
  await ctx.single.started;
}

export async function campaign(
  ctx: Chaos,
  name: string,
  title: string,
  body: (w: Workload) => Promise<{
    counts: Record<string, number>;
    after?: () => Promise<void>;
    /** The campaign's own checks, beside the invariants every campaign checks. */
    checks?: () => Promise<InvariantResult[]>;
  }>,
): Promise<CampaignResult> {
  ctx.say(`\n== ${name}: ${title}`);
  const namespace = `chaos-${name}`;
  await ensureNamespace(ctx.kube, namespace);
  const w = new Workload(ctx.kube, ctx.random, namespace, ctx.branches);
  ctx.workloads.push(w);
  await startSingle(ctx);
  const started = Date.now();
  const served = ctx.platform.requestsServed() - ctx.platform.ownRequests();
  const routesBefore = ctx.platform.operatorRoutes();
  const issued = await ctx.platform.issuedKeys();
  const crashesBefore = ctx.operators.crashes.length;
  // A rotating key from the start, so kills and faults can land on rotations.
  await w.createKey(true);
  const { counts, after, checks } = await body(w);
  await ctx.platform.clearFaults();
  ctx.cluster.proxy.restore();
  const struck = Object.entries(counts).map(([k, v]) => `${k} ${v}`);
  ctx.say(
    `${name}: faults off after ${w.flowCount} flows${struck.length > 0 ? ` (${struck.join(", ")})` : ""}; waiting for convergence`,
  );
  const converged = await converge(ctx.kube, ctx.platform, [w], ctx.mode.convergeTimeoutMs);
  const requests = ctx.platform.requestsServed() - ctx.platform.ownRequests() - served;
  const byRoute = [...ctx.platform.operatorRoutes()]
    .map(([route, n]): [string, number] => [route, n - (routesBefore.get(route) ?? 0)])
    .filter(([, n]) => n !== 0)
    .sort((a, b) => b[1] - a[1]);
  ctx.say(`${name}: ${requests} platform requests: ${byRoute.map(([r, n]) => `${r} ${n}`).join(", ")}`);
  const work = w.flowCount + (await ctx.platform.issuedKeys()) - issued;
  await after?.();
  await startSingle(ctx);
  const crashes = ctx.operators.crashes.length - crashesBefore;
  if (crashes > 0) counts["operator crashes (restarted)"] = crashes;
  const invariants = [
    converged.result,
    ...(await checkEndpoints(ctx.kube, ctx.platform, ctx.workloads)),
    ...(await checkKeys(ctx.kube, ctx.platform, ctx.workloads)),
    ...((await checks?.()) ?? []),
  ];
  // The campaign's resources go, so the next campaign's requests are its own.
  await w.deleteAll();
  const removed = await converge(ctx.kube, ctx.platform, [w], ctx.mode.convergeTimeoutMs);
  removed.result.name = "its resources deleted cleanly";
  invariants.push(removed.result);
  return {
    name,
    title,
    flows: Object.fromEntries(w.flows),
    flowCount: w.flowCount,
    counts,
    requests,
    byRoute,
    work,
    durationMs: Date.now() - started,
    invariants,
  };
}

/** The same workload with no fault: the yardstick for request counts. */
export function baseline(ctx: Chaos): Promise<CampaignResult> {
  return campaign(ctx, "baseline", "the workload without faults", async (w) => {
    for (let i = 0; i < ctx.mode.flows; i++) {
      await w.step(pickFlow(ctx.random));
      await gap(ctx.random);
    }
    return { counts: {} };
  });
}

/** kill -9 of the operator at a random moment of a flow, restarted at once. */
export function kills(ctx: Chaos): Promise<CampaignResult> {
  return campaign(ctx, "kills", "kill -9 of the operator during every kind of flow", async (w) => {
    const counts: Record<string, number> = { kills: 0 };
    await startSingle(ctx);
    for (let i = 0; i < ctx.mode.kills; i++) {
      const { kind, rotationDueAt } = await w.step(pickFlow(ctx.random));
      // A random moment of the flow; for a rotation, around the moment it is due.
      const delay =
        rotationDueAt === undefined
          ? ctx.random.int(0, 1500)
          : Math.min(8000, Math.max(0, rotationDueAt - Date.now() + ctx.random.int(-500, 1500)));
      await sleep(delay);
      if (ctx.single && (await ctx.operators.kill(ctx.single))) {
        counts.kills = (counts.kills ?? 0) + 1;
        counts[`kills during ${kind}`] = (counts[`kills during ${kind}`] ?? 0) + 1;
      }
      ctx.single = ctx.operators.start(false);
      // Back at work before the next kill, so every kill interrupts something.
      await Promise.race([ctx.single.started, sleep(20_000)]);
      if ((i + 1) % 20 === 0) ctx.say(`kills: ${i + 1}/${ctx.mode.kills}`);
    }
    // Branch resources, each create interrupted by a kill -9 at a random moment.
    const branches = new BranchFlows(ctx.kube, ctx.random, w.namespace, ctx.platform.projects);
    const branchKills = Math.max(3, Math.round(ctx.mode.kills / 10));
    for (let i = 0; i < branchKills; i++) {
      await branches.create();
      await sleep(ctx.random.int(0, 1500));
      if (ctx.single && (await ctx.operators.kill(ctx.single))) {
        counts.kills = (counts.kills ?? 0) + 1;
        counts["kills during branch-create"] = (counts["kills during branch-create"] ?? 0) + 1;
      }
      ctx.single = ctx.operators.start(false);
      await Promise.race([ctx.single.started, sleep(20_000)]);
    }
    return {
      counts,
      checks: async () => [
        await branches.check(ctx.platform, ctx.mode.convergeTimeoutMs),
        await branches.deleteAll(ctx.platform, ctx.mode.convergeTimeoutMs),
      ],
    };
  });
}

/** API server restarts, watch (TCP) cuts and frozen connections between the operator and the API server. */
export function kubernetesFaults(ctx: Chaos): Promise<CampaignResult> {
  return campaign(ctx, "kubernetes", "API server restarts and watch cuts during work", async (w) => {
    const counts = { "API server restarts": 0, "connection cuts": 0, "frozen connections": 0 };
    await startSingle(ctx);
    const restartEvery = 6;
    for (let i = 0; i < ctx.mode.flows; i++) {
      await w.step(pickFlow(ctx.random));
      if (i % restartEvery === restartEvery - 1) {
        await ctx.cluster.restart({ downMs: ctx.random.int(0, 2000) });
        counts["API server restarts"]++;
      } else if (ctx.random.chance(0.5)) {
        ctx.cluster.proxy.cut();
        await sleep(ctx.random.int(200, 2000));
        ctx.cluster.proxy.restore();
        counts["connection cuts"]++;
      } else if (ctx.mode.freezes && ctx.random.chance(0.3)) {
        // Open connections stop forwarding without closing: a half-dead path the operator must notice.
        ctx.cluster.proxy.freeze();
        counts["frozen connections"]++;
      }
      await gap(ctx.random);
    }
    return { counts };
  });
}

const platformFaults: { name: string; faults: Partial<FaultsConfig> }[] = [
  {
    name: "20% 5xx",
    faults: {
      requests: [
        { status: 500, rate: 0.1 },
        { status: 503, rate: 0.1 },
      ],
    },
  },
  { name: "connection resets", faults: { requests: [{ reset: true, rate: 0.3 }] } },
  {
    name: "lost responses after a change",
    faults: {
      requests: ["POST", "PATCH", "DELETE"].map((method) => ({ method, lose_response: true, rate: 0.5 })),
    },
  },
  {
    name: "423 storm",
    faults: {
      requests: ["POST", "PATCH", "DELETE"].map((method) => ({ method, status: 423 as const, rate: 1 })),
    },
  },
  { name: "429 storm", faults: { requests: [{ status: 429, rate: 1 }] } },
  { name: "failed operations", faults: { operations: [{ rate: 0.6 }] } },
];

/** The platform misbehaving in every way the emulator can, a few flows at a time. */
export function platformFaultsCampaign(ctx: Chaos): Promise<CampaignResult> {
  return campaign(
    ctx,
    "platform",
    "platform faults: 5xx, resets, lost responses, 423/429 storms, failed operations",
    async (w) => {
      const counts: Record<string, number> = {};
      await startSingle(ctx);
      const failedBefore = await ctx.platform.failedOperations();
      const injectedBefore = new Map(ctx.platform.injected);
      let order: typeof platformFaults = [];
      for (let i = 0; i < ctx.mode.flows; i++) {
        if (i % 3 === 0) {
          if (order.length === 0) order = [...platformFaults].sort(() => ctx.random.next() - 0.5);
          const mode = order.shift()!;
          await ctx.platform.setFaults(mode.faults);
          counts[`phases: ${mode.name}`] = (counts[`phases: ${mode.name}`] ?? 0) + 1;
        }
        // Each phase opens with an endpoint change, so every kind of fault meets platform operations.
        await w.step(i % 3 === 0 ? "update" : pickFlow(ctx.random));
        await gap(ctx.random);
      }
      await ctx.platform.clearFaults();
      for (const [fault, n] of ctx.platform.injected) {
        counts[`injected: ${fault}`] = n - (injectedBefore.get(fault) ?? 0);
      }
      counts["operations failed"] = (await ctx.platform.failedOperations()) - failedBefore;
      return { counts };
    },
  );
}

interface Lease extends KubeObject {
  spec?: { holderIdentity?: string; leaseTransitions?: number };
}

/** Two replicas with leader election; the leader is killed during work, a new standby started. */
export function leadership(ctx: Chaos): Promise<CampaignResult> {
  return campaign(ctx, "leadership", "kill -9 of the leader of two replicas during work", async (w) => {
    const counts = { "leader kills": 0, "leader changes seen": 0 };
    if (ctx.single) await ctx.operators.stop(ctx.single);
    ctx.single = undefined;
    const replicas = new Set([ctx.operators.start(true), ctx.operators.start(true)]);
    ctx.operators.onReplaced = (old, fresh) => {
      if (replicas.delete(old)) replicas.add(fresh);
    };
    await Promise.all([...replicas].map((r) => r.started));
    const lease = () =>
      persist("lease", () => ctx.kube.get<Lease>(leaseKind, ctx.operatorNamespace, "neon-cloud-operator"));
    const holders = new Set<string>();
    const killAt = new Set(
      Array.from({ length: ctx.mode.leaderKills }, (_, k) =>
        Math.floor(((k + 0.5) * ctx.mode.flows) / ctx.mode.leaderKills),
      ),
    );
    for (let i = 0; i < ctx.mode.flows; i++) {
      await w.step(pickFlow(ctx.random));
      await gap(ctx.random);
      const holder = (await lease())?.spec?.holderIdentity;
      if (holder) holders.add(holder);
      if (!killAt.has(i)) continue;
      const leader = [...replicas].find((r) => holder?.startsWith(`${r.name}_`));
      if (!leader) continue;
      await ctx.operators.kill(leader);
      replicas.delete(leader);
      counts["leader kills"]++;
      replicas.add(ctx.operators.start(true));
      // Work goes on while the lease runs out and the standby takes over.
    }
    return {
      counts,
      after: async () => {
        const holder = (await lease())?.spec?.holderIdentity;
        if (holder) holders.add(holder);
        counts["leader changes seen"] = holders.size - 1;
        ctx.operators.onReplaced = ctx.replaceSingle;
        await Promise.all([...replicas].map((r) => ctx.operators.stop(r)));
      },
    };
  });
}

/** The label the shards campaign splits resources by. */
const shardLabel = "neoncloud.dev/shard";

/**
 * Two shards by label (--watch-label-selector), each one replica with half the account's budget:
 * resources drawn into either, moved between them during work, and shards killed with kill -9 at
 * random moments. Every invariant must hold as with one operator: nothing created twice across the
 * two, nothing lost, every key stored or revoked.
 */
export function shards(ctx: Chaos): Promise<CampaignResult> {
  return campaign(
    ctx,
    "shards",
    "two shards by label: resources moved between them, shards killed",
    async (w) => {
      const counts = { moves: 0, "shard kills": 0 };
      if (ctx.single) await ctx.operators.stop(ctx.single);
      ctx.single = undefined;
      const flagsOf = (selector: string) => [
        `--watch-label-selector=${selector}`,
        "--account-budget-share=0.5",
        "--shard-handover-delay=3s",
      ];
      const selectors = [`${shardLabel}=a`, `${shardLabel}!=a`];
      const replicas = new Set(selectors.map((s) => ctx.operators.start(false, undefined, flagsOf(s))));
      ctx.operators.onReplaced = (old, fresh) => {
        if (replicas.delete(old)) replicas.add(fresh);
      };
      await Promise.all([...replicas].map((r) => r.started));
      const draw = () => (ctx.random.chance(0.5) ? "a" : "b");
      w.labels = () => ({ [shardLabel]: draw() });
      const killAt = strikes(ctx.mode.flows, ctx.mode.leaderKills);
      for (let i = 0; i < ctx.mode.flows; i++) {
        await w.step(pickFlow(ctx.random));
        if (ctx.random.chance(0.3) && (await w.relabel(shardLabel, draw()))) counts.moves++;
        if (killAt.has(i)) {
          const victim = ctx.random.pick([...replicas]);
          await sleep(ctx.random.int(0, 1500));
          if (await ctx.operators.kill(victim)) counts["shard kills"]++;
          replicas.delete(victim);
          replicas.add(ctx.operators.start(false, undefined, victim.flags));
        }
        await gap(ctx.random);
      }
      return {
        counts,
        after: async () => {
          ctx.operators.onReplaced = ctx.replaceSingle;
          await Promise.all([...replicas].map((r) => ctx.operators.stop(r)));
        },
      };
    },
  );
}

/** The flow indexes at which a campaign strikes `times` times, spread over its flows. */
function strikes(flows: number, times: number): Set<number> {
  return new Set(Array.from({ length: times }, (_, k) => Math.floor(((k + 0.5) * flows) / times)));
}

/** How long a cut-off leader may take to exit: lease renewals hang past the renew deadline (10 s). */
const cutOffExitMs = 45_000;

/**
 * Two replicas with leader election, each on a path of its own to the API server. Right after a
 * create, the leader's path goes silent (its requests hang; it is not killed): it must notice that
 * its lease renewals fail, abort its work and exit 1, while the standby takes over and finishes the
 * create without a duplicate.
 */
export function cutOff(ctx: Chaos): Promise<CampaignResult> {
  return campaign(
    ctx,
    "cutoff",
    "the leader cut off from the API server (its requests hang, it is not killed) while a create is in flight",
    async (w) => {
      const counts = { "leaders cut off": 0, "cut-off leaders that exited 1": 0 };
      const problems: string[] = [];
      if (ctx.single) await ctx.operators.stop(ctx.single);
      ctx.single = undefined;
      const paths = new Map<OperatorProcess, TcpProxy>();
      const replicas = new Set<OperatorProcess>();
      const start = async () => {
        const path = await ctx.cluster.privatePath(`cutoff-${paths.size + 1}`);
        const replica = ctx.operators.start(true, path.kubeconfig);
        paths.set(replica, path.proxy);
        replicas.add(replica);
        return replica;
      };
      ctx.operators.onReplaced = (old, fresh) => {
        if (replicas.delete(old)) replicas.add(fresh);
      };
      await Promise.all([await start(), await start()].map((r) => r.started));
      const exits: Promise<void>[] = [];
      const strikeAt = strikes(ctx.mode.flows, ctx.mode.leaderKills);
      for (let i = 0; i < ctx.mode.flows; i++) {
        if (!strikeAt.has(i)) {
          await w.step(pickFlow(ctx.random));
          await gap(ctx.random);
          continue;
        }
        // A leader on a path of its own (after a cut, the standby takes over once the lease runs out).
        let leader: OperatorProcess | undefined;
        for (let waited = 0; !leader && waited < 60_000; waited += 500) {
          const lease = await persist("lease", () =>
            ctx.kube.get<Lease>(leaseKind, ctx.operatorNamespace, "neon-cloud-operator"),
          );
          const holder = lease?.spec?.holderIdentity;
          leader = [...replicas].find((r) => holder?.startsWith(`${r.name}_`) && paths.has(r));
          if (!leader) await sleep(500);
        }
        await w.step("create");
        if (!leader) continue;
        // The create reaches the leader's informer at once; its platform call or status write is
        // under way within a few hundred milliseconds.
        await sleep(ctx.random.int(50, 800));
        leader.ending = true; // its exit is the point, not a crash
        paths.get(leader)?.hang();
        replicas.delete(leader);
        counts["leaders cut off"]++;
        exits.push(
          Promise.race([leader.exited.then(() => true), sleep(cutOffExitMs).then(() => false)]).then(
            async (exited) => {
              if (exited && leader.child.exitCode === 1) counts["cut-off leaders that exited 1"]++;
              else {
                problems.push(
                  exited
                    ? `${leader.name} exited with ${leader.child.exitCode ?? leader.child.signalCode}, not 1 (${leader.logFile})`
                    : `${leader.name} still running ${cutOffExitMs / 1000} s after its path went silent (${leader.logFile})`,
                );
                await ctx.operators.kill(leader);
              }
            },
          ),
        );
        await start(); // the next standby, as a Deployment's replacement pod
      }
      return {
        counts,
        after: async () => {
          await Promise.all(exits);
          ctx.operators.onReplaced = ctx.replaceSingle;
          await Promise.all([...replicas].map((r) => ctx.operators.stop(r)));
          await Promise.all([...paths.values()].map((p) => p.close()));
        },
        checks: () =>
          Promise.resolve([
            {
              name: "a leader cut off from the API server exits (1) on its own",
              pass: problems.length === 0 && counts["leaders cut off"] > 0,
              counts: `${counts["cut-off leaders that exited 1"]}/${counts["leaders cut off"]} cut-off leaders exited 1 within ${cutOffExitMs / 1000} s`,
              problems: counts["leaders cut off"] > 0 ? problems : ["no leader was cut off"],
            },
          ]),
      };
    },
  );
}

const branchResourceKind: ResourceKind = {
  group: "neoncloud.dev",
  version: "v1alpha1",
  plural: "branches",
  kind: "Branch",
};

/** Removes the status of every ComputeEndpoint, ApiKey and Branch of `namespace`; returns how many. */
async function wipeStatuses(kube: KubeClient, namespace: string): Promise<number> {
  let wiped = 0;
  for (const kind of [computeEndpointResourceKind, apiKeyResourceKind, branchResourceKind]) {
    const list = await persist(`list ${kind.plural}`, () => kube.list(kind, { namespace }));
    for (const obj of list.items) {
      if (!obj.metadata.name || !(obj as { status?: unknown }).status) continue;
      await persist(`wipe ${obj.metadata.name}`, async () => {
        try {
          await kube.patch(
            kind,
            namespace,
            obj.metadata.name ?? "",
            { status: null },
            ContentType.MergePatch,
            "status",
          );
        } catch (err) {
          if ((err as { statusCode?: number }).statusCode !== 404) throw err; // deleted meanwhile
        }
      });
      wiped++;
    }
  }
  return wiped;
}

/**
 * Status wiped from every resource mid-run, as a restore from a backup without status leaves
 * them (Velero restores no status by default): once while the operator runs, once while it is
 * down. The operator must find what it made (no second endpoint, no leaked key) from names and
 * the key Secrets.
 */
export function statusWiped(ctx: Chaos): Promise<CampaignResult> {
  return campaign(
    ctx,
    "restore",
    "status wiped from every resource (a restore from a backup without status)",
    async (w) => {
      const done = await flowsWithRestores(ctx, w, () => wipeStatuses(ctx.kube, w.namespace));
      return { counts: { "status wipes": done.restores, "statuses wiped": done.objects } };
    },
  );
}

/**
 * The workload's flows with a restore struck twice: once while the operator runs, once while it
 * is down. `restore` returns how many objects it touched.
 */
export async function flowsWithRestores(
  ctx: Chaos,
  w: Workload,
  restore: () => Promise<number>,
): Promise<{ restores: number; objects: number }> {
  const done = { restores: 0, objects: 0 };
  await startSingle(ctx);
  const strikeAt = [...strikes(ctx.mode.flows, 2)];
  for (let i = 0; i < ctx.mode.flows; i++) {
    await w.step(pickFlow(ctx.random));
    await gap(ctx.random);
    if (!strikeAt.includes(i)) continue;
    const whileDown = i === strikeAt[1];
    if (whileDown && ctx.single) {
      await ctx.operators.stop(ctx.single);
      ctx.single = undefined;
    }
    done.objects += await restore();
    done.restores++;
    if (whileDown) await startSingle(ctx);
  }
  return done;
}
