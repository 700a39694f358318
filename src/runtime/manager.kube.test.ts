import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { fetch } from "undici";
import { Action } from "./action.ts";
import { KubeClient } from "./kube.ts";
import { leaseKind } from "./leader.ts";
import { Manager } from "./manager.ts";
import {
  createNamespace,
  installCrd,
  loadKubeConfig,
  waitFor,
  widgetKind,
  type Widget,
} from "../../test/support/runtime/cluster.ts";
import { startTcpProxy, type TcpProxy } from "../../test/support/runtime/tcp-proxy.ts";

const widgets = widgetKind();
const election = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 250 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Replica {
  manager: Manager;
  proxy: TcpProxy;
  started: string[];
  reconciled: string[];
  /** Reconciles that started while this replica was not the leader: must stay empty. */
  actedWhileStandby: string[];
}

describe("manager: leader election, serving and shutdown on the real API server", () => {
  let client: KubeClient;
  const replicas: Replica[] = [];

  beforeAll(async () => {
    client = new KubeClient(loadKubeConfig(inject("kubeconfig")));
    await installCrd(client, widgets);
  });
  afterAll(async () => {
    for (const r of replicas) r.proxy.restore();
    await Promise.all(replicas.map((r) => r.manager.stop()));
    await Promise.all(replicas.map((r) => r.proxy.close()));
  });

  async function replica(
    ns: string,
    name: string,
    options: { reconcileMs?: number; metrics?: boolean } = {},
  ) {
    const proxy = await startTcpProxy(new URL(client.kubeConfig.getCurrentCluster()!.server));
    const manager = new Manager({
      client: new KubeClient(loadKubeConfig(inject("kubeconfig"), proxy.url), { requestTimeoutMs: 1_000 }),
      identity: name,
      leaderElection: { namespace: ns, name: "runtime-test-operator", ...election },
      metricsAddress: options.metrics ? "127.0.0.1:0" : undefined,
      shutdownDeadlineMs: 5_000,
    });
    const r: Replica = { manager, proxy, started: [], reconciled: [], actedWhileStandby: [] };
    manager.controller<Widget>({
      kind: widgets,
      namespaces: [ns],
      informer: { backoff: { baseDelayMs: 20, maxDelayMs: 200 } },
      reconciler: {
        async reconcile(obj) {
          const key = obj.metadata.name ?? "";
          if (!manager.isActing) r.actedWhileStandby.push(key);
          r.started.push(key);
          if (options.reconcileMs) await sleep(options.reconcileMs);
          r.reconciled.push(key);
          return Action.done();
        },
      },
    });
    replicas.push(r);
    await manager.start();
    return r;
  }

  /** Samples both replicas until `until` resolves, recording whether both ever acted at once. */
  function watchForSplitBrain(a: Replica, b: Replica) {
    let both = false;
    const timer = setInterval(() => {
      if (a.manager.isActing && b.manager.isActing) both = true;
    }, 5);
    return () => {
      clearInterval(timer);
      return both;
    };
  }

  const widget = (ns: string, name: string): Widget => ({
    apiVersion: "runtime-test.neoncloud.dev/v1",
    kind: "Widget",
    metadata: { name, namespace: ns },
  });

  it("exactly one of two replicas leads; when it loses the API server the other takes over", async () => {
    const ns = await createNamespace(client, "leader");
    const a = await replica(ns, "replica-a");
    const b = await replica(ns, "replica-b");
    const splitBrain = watchForSplitBrain(a, b);
    await waitFor(() => a.manager.isActing || b.manager.isActing, "a leader");
    const [leader, standby] = a.manager.isActing ? [a, b] : [b, a];
    await sleep(1_000);
    expect(standby.manager.isActing).toBe(false);
    expect(standby.manager.ready).toBe(true);

    await client.create(widgets, widget(ns, "first"));
    await waitFor(() => leader.reconciled.includes("first"), "the leader to reconcile");

    leader.proxy.cut();
    await waitFor(
      () => !leader.manager.isActing,
      "the cut-off leader to stop acting",
      election.renewDeadlineMs * 2,
    );
    await waitFor(() => standby.manager.isActing, "the standby to take over", election.leaseDurationMs * 2);
    await client.create(widgets, widget(ns, "second"));
    await waitFor(() => standby.reconciled.includes("second"), "the new leader to reconcile");

    leader.proxy.restore();
    await sleep(1_000);
    expect(leader.manager.isActing).toBe(false);
    expect(leader.reconciled).not.toContain("second");
    expect(splitBrain()).toBe(false);
    expect([...a.actedWhileStandby, ...b.actedWhileStandby]).toEqual([]);
  });

  it("a graceful stop finishes the running reconcile, releases the lease, and the standby leads at once", async () => {
    const ns = await createNamespace(client, "handover");
    const a = await replica(ns, "replica-a", { reconcileMs: 500 });
    await waitFor(() => a.manager.isActing, "the first replica to lead");
    const b = await replica(ns, "replica-b");
    await client.create(widgets, widget(ns, "slow"));
    await waitFor(() => a.started.includes("slow"), "the reconcile to start");
    expect(a.reconciled).toEqual([]);
    await a.manager.stop();
    expect(a.reconciled).toEqual(["slow"]);
    const lease = await client.get<{ metadata: object; spec?: { holderIdentity?: string } }>(
      leaseKind,
      ns,
      "runtime-test-operator",
    );
    expect(lease?.spec?.holderIdentity ?? "").not.toBe("replica-a");
    // Released, not expired: the standby needs a retry period, not a lease duration.
    await waitFor(() => b.manager.isActing, "the standby to lead", election.leaseDurationMs);
  });

  it("serves metrics, health and readiness", async () => {
    const ns = await createNamespace(client, "serving");
    const r = await replica(ns, "replica-metrics", { metrics: true });
    await waitFor(() => r.manager.isActing, "leading");
    await client.create(widgets, widget(ns, "counted"));
    await waitFor(() => r.reconciled.includes("counted"), "a reconcile");
    const base = r.manager.serverUrl!;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toMatch(/controller_runtime_reconcile_total\{controller="widget",result="success"\} [1-9]/);
    expect(text).toContain('workqueue_depth{name="widget",controller="widget",priority=""}');
    expect(text).toContain('leader_election_master_status{name="runtime-test-operator"} 1');
  });
});
