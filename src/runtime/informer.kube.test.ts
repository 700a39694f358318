import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Informer } from "./informer.ts";
import { ContentType, KubeClient } from "./kube.ts";
import {
  createNamespace,
  crdKind,
  installCrd,
  loadKubeConfig,
  waitFor,
  widgetKind,
  type Widget,
} from "../../test/support/runtime/cluster.ts";
import { startTcpProxy, type TcpProxy } from "../../test/support/runtime/tcp-proxy.ts";
import { Writable } from "node:stream";
import { createLogger } from "./log.ts";

const widgets = widgetKind();
const fast = { backoff: { baseDelayMs: 20, maxDelayMs: 500 } };

function recorder(informer: Informer<Widget>) {
  const events: string[] = [];
  informer.on({
    add: (o) => events.push(`add ${o.metadata.name}`),
    update: (_, o) => events.push(`update ${o.metadata.name}`),
    delete: (o) => events.push(`delete ${o.metadata.name}`),
  });
  return events;
}

describe("informer on the real API server", () => {
  let client: KubeClient;
  let ns: string;
  let proxy: TcpProxy;
  const informers: Informer<Widget>[] = [];

  beforeAll(async () => {
    client = new KubeClient(loadKubeConfig(inject("kubeconfig")));
    await installCrd(client, widgets);
    ns = await createNamespace(client, "informer");
    proxy = await startTcpProxy(new URL(client.kubeConfig.getCurrentCluster()!.server));
  });
  afterAll(async () => {
    await Promise.all(informers.map((i) => i.stop()));
    await proxy?.close();
  });

  function widget(name: string, labels?: Record<string, string>, namespace = ns): Widget {
    return {
      apiVersion: "runtime-test.neoncloud.dev/v1",
      kind: "Widget",
      metadata: { name, namespace, labels },
      spec: { size: 1 },
    };
  }

  it("keeps up after the server closes the watch, without relisting", async () => {
    await client.create(widgets, widget("closed-a"));
    const informer = new Informer<Widget>(client, widgets, {
      namespaces: [ns],
      watchTimeoutSeconds: 1,
      ...fast,
    });
    informers.push(informer);
    informer.start();
    await informer.waitForSync();
    expect(informer.get(ns, "closed-a")).toBeDefined();
    await waitFor(() => informer.stats.watches >= 3, "the server to close the watch twice");
    const patched = await client.patch<Widget>(
      widgets,
      ns,
      "closed-a",
      { spec: { size: 2 } },
      ContentType.MergePatch,
    );
    await waitFor(
      () => informer.get(ns, "closed-a")?.metadata.resourceVersion === patched.metadata.resourceVersion,
      "the update to reach the cache",
    );
    expect(informer.stats.lists).toBe(1);
  });

  it("survives a forced disconnect and sees what happened meanwhile, deletes included", async () => {
    await client.create(widgets, widget("cut-a"));
    const informer = new Informer<Widget>(
      new KubeClient(loadKubeConfig(inject("kubeconfig"), proxy.url)),
      widgets,
      { namespaces: [ns], ...fast },
    );
    informers.push(informer);
    const events = recorder(informer);
    informer.start();
    await informer.waitForSync();
    proxy.cut();
    await client.delete(widgets, ns, "cut-a");
    await client.create(widgets, widget("cut-b"));
    await waitFor(() => informer.stats.reconnects >= 2, "reconnect attempts while the network is down");
    expect(informer.get(ns, "cut-a")).toBeDefined();
    proxy.restore();
    await waitFor(() => informer.get(ns, "cut-b") !== undefined && !informer.get(ns, "cut-a"), "catching up");
    expect(events).toContain("delete cut-a");
    expect(events).toContain("add cut-b");
  });

  it("restarts a watch that went silent (a half-dead connection)", async () => {
    await client.create(widgets, widget("silent-a"));
    const informer = new Informer<Widget>(
      new KubeClient(loadKubeConfig(inject("kubeconfig"), proxy.url)),
      widgets,
      { namespaces: [ns], watchdogMs: 1_500, ...fast },
    );
    informers.push(informer);
    informer.start();
    await informer.waitForSync();
    // An update seen through the watch proves the stream is open before we freeze it.
    const live = await client.patch<Widget>(
      widgets,
      ns,
      "silent-a",
      { spec: { size: 6 } },
      ContentType.MergePatch,
    );
    await waitFor(
      () => informer.get(ns, "silent-a")?.metadata.resourceVersion === live.metadata.resourceVersion,
      "the watch to be live",
    );
    proxy.freeze();
    const patched = await client.patch<Widget>(
      widgets,
      ns,
      "silent-a",
      { spec: { size: 7 } },
      ContentType.MergePatch,
    );
    await waitFor(
      () => informer.get(ns, "silent-a")?.metadata.resourceVersion === patched.metadata.resourceVersion,
      "the update to arrive over a new connection",
    );
    expect(informer.stats.lists).toBe(1);
  });

  it("takes an idle watch's silence as routine: restarted from where it was, no warning, no backoff", async () => {
    // Nothing changes in this namespace, and the API server sends no bookmark while nothing
    // changes: the watch carries nothing, as on an idle sandbox.
    const idle = await createNamespace(client, "informer-idle");
    const lines: string[] = [];
    const sink = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
        done();
      },
    });
    const informer = new Informer<Widget>(client, widgets, {
      namespaces: [idle],
      watchdogMs: 1_000,
      log: createLogger("debug", sink),
      ...fast,
    });
    informers.push(informer);
    informer.start();
    await informer.waitForSync();
    // Four and a half watchdog periods of silence.
    await new Promise((r) => setTimeout(r, 4_500));
    const warnings = lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40);
    expect(warnings).toEqual([]);
    expect(informer.stats).toMatchObject({ lists: 1, reconnects: 0 });
    expect(informer.stats.silentRestarts).toBeGreaterThanOrEqual(3);
    // Still live: an object made now arrives through the current watch.
    await client.create(widgets, widget("after-idle", undefined, idle));
    await waitFor(() => informer.get(idle, "after-idle") !== undefined, "the object after the silences");
  });

  it("relists on 410 and emits deletes for objects that vanished while disconnected", async () => {
    // Recreating the CRD gives the kind a fresh watch cache, so resuming from
    // our old resourceVersion gets 410 Gone, and the old objects are gone too.
    const gadgets = widgetKind("gadgets", "Gadget");
    await installCrd(client, gadgets);
    const gadget = (name: string) => ({ ...widget(name), kind: "Gadget" });
    await client.create(gadgets, gadget("old-a"));
    await client.create(gadgets, gadget("old-b"));
    const informer = new Informer<Widget>(
      new KubeClient(loadKubeConfig(inject("kubeconfig"), proxy.url)),
      gadgets,
      { namespaces: [ns], ...fast },
    );
    informers.push(informer);
    const events = recorder(informer);
    informer.start();
    await informer.waitForSync();
    expect(informer.list()).toHaveLength(2);
    proxy.cut();
    await client.delete(crdKind, undefined, `gadgets.${gadgets.group}`);
    await waitFor(
      async () => !(await client.get(crdKind, undefined, `gadgets.${gadgets.group}`)),
      "CRD deletion",
    );
    await installCrd(client, gadgets);
    await client.create(gadgets, gadget("new-c"));
    proxy.restore();
    await waitFor(() => informer.get(ns, "new-c") !== undefined, "the new object");
    await waitFor(() => informer.list().length === 1, "the vanished objects to be deleted");
    expect(events).toEqual(expect.arrayContaining(["delete old-a", "delete old-b", "add new-c"]));
    expect(informer.stats.lists).toBeGreaterThanOrEqual(2);
  });

  it("watches only the given namespaces and labels", async () => {
    const other = await createNamespace(client, "informer-other");
    const informer = new Informer<Widget>(client, widgets, {
      namespaces: [ns],
      labelSelector: "team=db",
      ...fast,
    });
    informers.push(informer);
    informer.start();
    await informer.waitForSync();
    await client.create(widgets, widget("labelled", { team: "db" }));
    await client.create(widgets, widget("unlabelled"));
    await client.create(widgets, widget("labelled", { team: "db" }, other));
    await waitFor(() => informer.get(ns, "labelled") !== undefined, "the matching object");
    // A later marker proves the watch has moved past the other creations.
    await client.create(widgets, widget("marker", { team: "db" }));
    await waitFor(() => informer.get(ns, "marker") !== undefined, "the marker");
    expect(
      informer
        .list()
        .map((w) => `${w.metadata.namespace}/${w.metadata.name}`)
        .sort(),
    ).toEqual([`${ns}/labelled`, `${ns}/marker`]);
  });
});
