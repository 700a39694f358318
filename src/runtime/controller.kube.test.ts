import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Action } from "./action.ts";
import { Controller, type ControllerOptions, type Reconciler } from "./controller.ts";
import { TerminalError } from "./errors.ts";
import { EventRecorder, eventKind } from "./events.ts";
import { ContentType, KubeClient, type KubeObject, type ResourceKind } from "./kube.ts";
import { createMetrics } from "./metrics.ts";
import { SharedInformers } from "./shared-informers.ts";
import {
  createNamespace,
  installCrd,
  loadKubeConfig,
  waitFor,
  widgetKind,
  type Widget,
} from "../../test/support/runtime/cluster.ts";
import { startTcpProxy } from "../../test/support/runtime/tcp-proxy.ts";

const widgets = widgetKind();
const configMaps: ResourceKind = { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" };
const finalizer = "runtime-test.neoncloud.dev/cleanup";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("controller on the real API server", () => {
  let client: KubeClient;
  const controllers: Controller<Widget>[] = [];

  beforeAll(async () => {
    client = new KubeClient(loadKubeConfig(inject("kubeconfig")));
    await installCrd(client, widgets);
  });
  afterAll(async () => {
    await Promise.all(controllers.map((c) => c.stop()));
  });

  async function run(
    ns: string,
    reconciler: Reconciler<Widget>,
    options: Partial<ControllerOptions<Widget>> = {},
    events?: EventRecorder,
  ) {
    const metrics = createMetrics({ defaultMetrics: false });
    const controller = new Controller<Widget>(
      {
        kind: widgets,
        reconciler,
        namespaces: [ns],
        backoff: { baseDelayMs: 10, maxDelayMs: 200 },
        ...options,
      },
      { client, metrics, events },
    );
    controllers.push(controller);
    controller.startCaches();
    await controller.waitForSync();
    controller.startWorkers();
    return { controller, metrics };
  }

  function widget(ns: string, name: string, extra: Partial<Widget["metadata"]> = {}): Widget {
    return {
      apiVersion: "runtime-test.neoncloud.dev/v1",
      kind: "Widget",
      metadata: { name, namespace: ns, ...extra },
      spec: { size: 0 },
    };
  }

  it("100 rapid updates of one object cause far fewer reconciles, never two at once", async () => {
    const ns = await createNamespace(client, "burst");
    let reconciles = 0;
    let running = 0;
    let overlapped = false;
    let lastSize = -1;
    await run(
      ns,
      {
        async reconcile(obj) {
          reconciles++;
          if (++running > 1) overlapped = true;
          await sleep(50);
          lastSize = obj.spec?.size ?? -1;
          running--;
          return Action.done();
        },
      },
      { concurrency: 4 },
    );
    await client.create(widgets, widget(ns, "busy"));
    await waitFor(() => lastSize === 0, "the first reconcile");
    const before = reconciles;
    for (let size = 1; size <= 100; size++) {
      await client.patch(widgets, ns, "busy", { spec: { size } }, ContentType.MergePatch);
    }
    await waitFor(() => lastSize === 100, "a reconcile of the last update");
    const caused = reconciles - before;
    expect(overlapped).toBe(false);
    expect(caused).toBeGreaterThan(0);
    expect(caused).toBeLessThan(50);
  });

  it("a reconcile told by something outside the cluster that what it waits on happened runs again at once, not at its requeue", async () => {
    const ns = await createNamespace(client, "wake");
    const reconciled: number[] = [];
    let wake: (() => void) | undefined;
    await run(ns, {
      reconcile(_obj, ctx) {
        reconciled.push(Date.now());
        // Waiting on the platform: look again in a minute, unless woken before.
        wake = () => ctx.wake();
        return Promise.resolve(Action.requeueAfter(60_000));
      },
    });
    await client.create(widgets, widget(ns, "waiting"));
    await waitFor(() => reconciled.length === 1, "the first reconcile");
    await sleep(200);
    expect(reconciled).toHaveLength(1);
    wake!();
    await waitFor(() => reconciled.length === 2, "the reconcile the wake asked for");
  });

  it("a reconcile that changes nothing writes nothing", async () => {
    const ns = await createNamespace(client, "noop");
    let reconciles = 0;
    const { controller } = await run(
      ns,
      {
        async reconcile(obj, ctx) {
          reconciles++;
          await ctx.status.patch(obj, {
            observedGeneration: obj.metadata.generation,
            conditions: ctx.conditions.setCondition(obj.status?.conditions as never, {
              type: "Ready",
              status: "True",
              reason: "Reconciled",
              message: "widget is ready",
              observedGeneration: obj.metadata.generation,
            }),
          });
          return Action.done();
        },
      },
      { resyncPeriodMs: 100 },
    );
    await client.create(widgets, widget(ns, "steady"));
    await waitFor(
      () => controller.informer.get(ns, "steady")?.status?.observedGeneration === 1,
      "the status write",
    );
    const written = controller.informer.get(ns, "steady")!;
    const count = reconciles;
    // Across a second boundary, so a needlessly refreshed timestamp would show.
    const since = Date.now();
    await waitFor(
      () => reconciles >= count + 5 && Date.now() - since > 1_100,
      "resync reconciles for over a second",
    );
    const now = await client.get<Widget>(widgets, ns, "steady");
    expect(now?.metadata.resourceVersion).toBe(written.metadata.resourceVersion);
  });

  it("never starts a reconcile from a cached copy older than its own last status write", async () => {
    const ns = await createNamespace(client, "ryw");
    // Each pass counts from what it reads and requeues at once: a stale read would repeat a count.
    const seen: number[] = [];
    await run(ns, {
      async reconcile(obj, ctx) {
        const read = (obj.status as { count?: number } | undefined)?.count ?? 0;
        if (read >= 20) return Action.done();
        seen.push(read + 1);
        await ctx.status.patch(obj, { ...(obj.status ?? {}), count: read + 1 });
        return Action.requeueAfter(0);
      },
    });
    await client.create(widgets, widget(ns, "counter"));
    await waitFor(() => seen.includes(20), "twenty passes");
    expect(seen.slice(0, 20)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const stored = await client.get<Widget>(widgets, ns, "counter");
    expect((stored?.status as { count?: number } | undefined)?.count).toBe(20);
  });

  it("is not queued again by the echo of its own status write, but is by anyone else's change", async () => {
    const ns = await createNamespace(client, "echo");
    const seen: (string | undefined)[] = [];
    const { controller } = await run(ns, {
      async reconcile(obj, ctx) {
        seen.push(obj.metadata.labels?.owner);
        await ctx.status.patch(obj, { ...(obj.status ?? {}), reconciled: seen.length });
        return Action.done();
      },
    });
    await client.create(widgets, widget(ns, "quiet"));
    // The cache shows the write: its watch event has been handled (and would have queued a pass).
    await waitFor(
      () =>
        (controller.informer.get(ns, "quiet")?.status as { reconciled?: number } | undefined)?.reconciled ===
        1,
      "the status write in the cache",
    );
    await client.patch(
      widgets,
      ns,
      "quiet",
      { metadata: { labels: { owner: "team-a" } } },
      ContentType.MergePatch,
    );
    await waitFor(() => seen.includes("team-a"), "a pass for the label change");
    await waitFor(
      () =>
        (controller.informer.get(ns, "quiet")?.status as { reconciled?: number } | undefined)?.reconciled ===
        2,
      "the second status write in the cache",
    );
    // One pass for the creation, one for the label; none for either status write.
    expect(seen).toEqual([undefined, "team-a"]);
  });

  it("adds its finalizer before the first reconcile, cleans up on delete, and keeps other finalizers", async () => {
    const ns = await createNamespace(client, "finalizer");
    const seen: string[][] = [];
    const cleaned: string[] = [];
    const { controller } = await run(
      ns,
      {
        reconcile(obj) {
          seen.push(obj.metadata.finalizers ?? []);
          return Promise.resolve(Action.done());
        },
        cleanup(obj) {
          cleaned.push(obj.metadata.name ?? "");
          return Promise.resolve(Action.done());
        },
      },
      { finalizer },
    );
    await client.create(widgets, widget(ns, "guarded", { finalizers: ["example.com/keep"] }));
    await waitFor(() => seen.length > 0, "the first reconcile");
    expect(seen[0]).toEqual(["example.com/keep", finalizer]);
    await client.delete(widgets, ns, "guarded");
    await waitFor(() => cleaned.includes("guarded"), "cleanup");
    await waitFor(
      () => controller.informer.get(ns, "guarded")?.metadata.finalizers?.length === 1,
      "our finalizer to be removed",
    );
    expect(controller.informer.get(ns, "guarded")?.metadata.finalizers).toEqual(["example.com/keep"]);
    await client.patch(widgets, ns, "guarded", { metadata: { finalizers: null } }, ContentType.MergePatch);
    await waitFor(() => controller.informer.get(ns, "guarded") === undefined, "the object to go");
  });

  it("retries failures with backoff, but a terminal error waits for a spec change or a resync", async () => {
    const ns = await createNamespace(client, "errors");
    const calls = new Map<string, number>();
    const events = new EventRecorder(client, {
      controller: "runtime-test",
      instance: "test",
      minWriteIntervalMs: 50,
    });
    const { metrics } = await run(
      ns,
      {
        reconcile(obj) {
          const name = obj.metadata.name ?? "";
          const n = (calls.get(name) ?? 0) + 1;
          calls.set(name, n);
          if (name === "flaky" && n < 4) throw new Error("platform unavailable");
          if (name === "invalid" && obj.spec?.size === 13) throw new TerminalError("size 13 is not offered");
          return Promise.resolve(Action.done());
        },
      },
      { resyncPeriodMs: 6_000 },
      events,
    );
    await client.create(widgets, widget(ns, "flaky"));
    await client.create(widgets, { ...widget(ns, "invalid"), spec: { size: 13 } });
    await waitFor(() => (calls.get("flaky") ?? 0) >= 4, "flaky to succeed after retries");
    expect(calls.get("invalid")).toBe(1);
    // No backoff retry, and its own updates (a label here, as a status write would be) leave it be.
    await client.patch(
      widgets,
      ns,
      "invalid",
      { metadata: { labels: { seen: "yes" } } },
      ContentType.MergePatch,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(calls.get("invalid")).toBe(1);
    // A resync tries it again, once.
    await waitFor(() => (calls.get("invalid") ?? 0) === 2, "the resync's retry", 15_000);
    await client.patch(widgets, ns, "invalid", { spec: { size: 12 } }, ContentType.MergePatch);
    await waitFor(() => (calls.get("invalid") ?? 0) >= 3, "a retry after the spec changed");

    // controller-runtime's accounting: a terminal failure is an error, and a terminal error too.
    const counts = await metrics.reconcileTotal.get();
    const byResult = Object.fromEntries(counts.values.map((v) => [String(v.labels.result), v.value]));
    // Three backoff failures of "flaky", and "invalid" twice: at first, and at the resync.
    expect(byResult).toMatchObject({ error: 5 });
    expect((await metrics.reconcileErrors.get()).values[0]?.value).toBe(5);
    expect((await metrics.terminalReconcileErrors.get()).values[0]?.value).toBe(2);

    // Three failures of "flaky" aggregate into one Event with a series count.
    await events.flush();
    const list = await client.list<KubeObject & { reason?: string; series?: { count: number } }>(eventKind, {
      namespace: ns,
    });
    const flakyEvents = list.items.filter((e) => e.reason === "ReconcileError");
    expect(flakyEvents).toHaveLength(1);
    expect(flakyEvents[0]?.series?.count).toBe(3);
  });

  /**
   * A change whose reconcile is caught before its status write by an outage: the controller's
   * requests go through a proxy that is cut for a while. With `watchesThroughProxy` false its
   * watches go straight to the server and stay open, as they do while an API server shuts down
   * gracefully (it refuses new connections for many seconds, open watches stay open). Resolves
   * once the change is reconciled after the outage, within a bound far below its backoff.
   */
  async function changeThroughOutage(prefix: string, watchesThroughProxy: boolean) {
    const ns = await createNamespace(client, prefix);
    const proxy = await startTcpProxy(new URL(client.kubeConfig.getCurrentCluster()!.server));
    const viaProxy = new KubeClient(loadKubeConfig(inject("kubeconfig"), proxy.url));
    if (!watchesThroughProxy) viaProxy.watch = client.watch.bind(client);
    let outageBegun!: () => void;
    const outage = new Promise<void>((resolve) => (outageBegun = resolve));
    let attempts = 0;
    const metrics = createMetrics({ defaultMetrics: false });
    const controller = new Controller<Widget>(
      {
        kind: widgets,
        namespaces: [ns],
        // Where a long outage leaves an object's backoff: its next retry minutes away.
        backoff: { baseDelayMs: 120_000, maxDelayMs: 300_000 },
        informer: { backoff: { baseDelayMs: 50, maxDelayMs: 500 } },
        reconciler: {
          async reconcile(obj, ctx) {
            if (obj.spec?.size === 1 && attempts++ === 0) await outage;
            await ctx.status.patch(obj, { observedSize: obj.spec?.size });
            return Action.done();
          },
        },
      },
      { client: viaProxy, metrics },
    );
    controllers.push(controller);
    try {
      controller.startCaches();
      await controller.waitForSync();
      controller.startWorkers();
      const observedSize = async () =>
        (await client.get<Widget>(widgets, ns, "through-outage"))?.status?.observedSize;
      await client.create(widgets, widget(ns, "through-outage"));
      await waitFor(async () => (await observedSize()) === 0, "the first reconcile");

      await client.patch(widgets, ns, "through-outage", { spec: { size: 1 } }, ContentType.MergePatch);
      await waitFor(() => attempts === 1, "the reconcile of the change to start");
      const reconnectsBefore = controller.informer.stats.reconnects;
      proxy.cut();
      outageBegun();
      const failed = async () =>
        (await metrics.reconcileTotal.get()).values.some((v) => v.labels.result === "error" && v.value > 0);
      await waitFor(failed, "the status write to fail");
      await sleep(2_000);
      const watchNoticed = controller.informer.stats.reconnects > reconnectsBefore;

      proxy.restore();
      // Before, the retry waited out the object's backoff: a minute or more here.
      await waitFor(async () => (await observedSize()) === 1, "the change to be reconciled", 15_000);
      return { watchNoticed };
    } finally {
      await controller.stop();
      await proxy.close();
    }
  }

  it("reconciles a change caught by an API server outage as soon as the server answers again", async () => {
    const { watchNoticed } = await changeThroughOutage("outage", true);
    expect(watchNoticed).toBe(true);
  });

  it("does so too when the outage leaves the watches open, as a graceful shutdown does", async () => {
    const { watchNoticed } = await changeThroughOutage("outage-open-watch", false);
    // No watch broke, so only the runtime's own probe of the server could tell it was back.
    expect(watchNoticed).toBe(false);
  });

  it("re-reconciles the objects that name a Secret when it appears, and reads it from the cache", async () => {
    const ns = await createNamespace(client, "watches");
    const secrets: ResourceKind = { group: "", version: "v1", plural: "secrets", kind: "Secret" };
    const sawSecret: boolean[] = [];
    await run(
      ns,
      {
        reconcile(obj, ctx) {
          sawSecret.push(ctx.cache(secrets).get(ns, obj.spec?.note ?? "") !== undefined);
          return Promise.resolve(Action.done());
        },
      },
      {
        watches: [
          {
            kind: secrets,
            map: (secret, primary) =>
              primary
                .list(secret.metadata.namespace)
                .filter((w) => w.spec?.note === secret.metadata.name)
                .map((w) => `${w.metadata.namespace}/${w.metadata.name}`),
          },
        ],
      },
    );
    await client.create(widgets, { ...widget(ns, "needs-creds"), spec: { note: "creds" } });
    await waitFor(() => sawSecret.length === 1, "the first reconcile");
    expect(sawSecret).toEqual([false]);
    await client.create(secrets, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "creds", namespace: ns },
      stringData: { apiKey: "not-a-real-key" },
    } as KubeObject);
    await waitFor(() => sawSecret.length === 2, "a reconcile when the Secret appears");
    expect(sawSecret).toEqual([false, true]);
  });

  it("re-reconciles the owner when an owned object changes or is deleted", async () => {
    const ns = await createNamespace(client, "owns");
    const reconciled: string[] = [];
    const { controller } = await run(
      ns,
      {
        reconcile(obj) {
          reconciled.push(obj.metadata.name ?? "");
          return Promise.resolve(Action.done());
        },
      },
      { owns: [configMaps] },
    );
    const owner = await client.create<Widget>(widgets, widget(ns, "owner"));
    await waitFor(() => reconciled.includes("owner"), "the first reconcile");
    await client.create(configMaps, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "owned",
        namespace: ns,
        ownerReferences: [
          {
            apiVersion: owner.apiVersion!,
            kind: "Widget",
            name: "owner",
            uid: owner.metadata.uid!,
            controller: true,
          },
        ],
      },
    });
    await waitFor(() => reconciled.length >= 2, "a reconcile for the new owned object");
    const before = reconciled.length;
    await client.delete(configMaps, ns, "owned");
    await waitFor(() => reconciled.length > before, "a reconcile for the deleted owned object");
    expect(new Set(reconciled)).toEqual(new Set(["owner"]));
    expect(controller.caches).toHaveLength(2);
  });

  it("controllers of one manager cache a kind they both watch once, each finding it by its own indexes", async () => {
    const ns = await createNamespace(client, "shared");
    const informers = new SharedInformers(client);
    const seen: Record<string, string[]> = {};
    // Widgets: the primary kind of one controller, and watched by another that indexes them its own way
    // under the same index name.
    const widgetsController = new Controller<Widget>(
      {
        kind: widgets,
        namespaces: [ns],
        indexes: { label: (w) => [String(w.spec?.size)] },
        reconciler: {
          reconcile(_obj, ctx) {
            const cache = ctx.cache(widgets);
            seen["widgets"] = [...cache.byIndex("label", "7"), ...cache.byIndex("label", "big")];
            return Promise.resolve(Action.done());
          },
        },
      },
      { client, informers },
    );
    const configMapsController = new Controller<KubeObject>(
      {
        kind: configMaps,
        namespaces: [ns],
        watches: [{ kind: widgets, map: () => [] }],
        reconciler: {
          reconcile(_obj, ctx) {
            const cache = ctx.cache(widgets);
            seen["configmaps"] = [...cache.byIndex("label", "big"), ...cache.byIndex("label", "7")];
            return Promise.resolve(Action.done());
          },
        },
      },
      { client, informers },
    );
    configMapsController.addIndex<Widget>(widgets, "label", (w) => [w.metadata.name ?? ""]);
    const both = [widgetsController, configMapsController] as Controller<KubeObject>[];
    controllers.push(...(both as Controller<Widget>[]));
    expect(configMapsController.caches.find((i) => i.kind === widgets)).toBe(widgetsController.informer);
    expect(informers.all).toHaveLength(2);

    for (const c of both) c.startCaches();
    await Promise.all(both.map((c) => c.waitForSync()));
    await client.create<Widget>(widgets, { ...widget(ns, "big"), spec: { size: 7 } });
    await client.create(configMaps, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: ns },
    });
    await waitFor(() => widgetsController.informer.list().length === 1, "the widget in the shared cache");
    for (const c of both) c.startWorkers();
    await waitFor(() => seen["widgets"] !== undefined && seen["configmaps"] !== undefined, "both reconciles");
    // Each found the widget through its own index only: neither sees the other's values.
    expect(seen).toEqual({ widgets: [`${ns}/big`], configmaps: [`${ns}/big`] });

    // A value several objects share, then one of them gone; the second function's index is its own.
    const shared = widgetsController.informer;
    await client.create<Widget>(widgets, { ...widget(ns, "also"), spec: { size: 7 } });
    await waitFor(() => shared.byIndex("label", "7").length === 2, "both widgets under one value");
    expect(shared.byIndex("label#2", "also")).toEqual([`${ns}/also`]);
    await client.delete(widgets, ns, "big");
    await waitFor(() => shared.byIndex("label", "7").length === 1, "the one left");
    expect(shared.byIndex("label", "7")).toEqual([`${ns}/also`]);
    expect(shared.byIndex("label#2", "big")).toEqual([]);
    await Promise.all(both.map((c) => c.stop()));
    await informers.stop();
  });
});
