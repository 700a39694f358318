// Two controllers of one kind as two shards (shard.ts), on the real API server: each reconciles
// only the objects its selector matches, though both cache all of them; an object whose label
// moves it is left by one and taken by the other, never reconciled by both at once, even when the
// move comes while the shard it leaves is in the middle of a reconcile of it.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Action } from "./action.ts";
import { Controller, type Reconciler } from "./controller.ts";
import { ContentType, KubeClient } from "./kube.ts";
import { parseLabelSelector } from "./label-selector.ts";
import {
  createNamespace,
  installCrd,
  loadKubeConfig,
  waitFor,
  widgetKind,
  type Widget,
} from "../../test/support/runtime/cluster.ts";

const widgets = widgetKind();
const shardLabel = "neoncloud.dev/shard";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What each shard did: the reconciles of each object, with when they ran. */
interface Log {
  runs: { shard: string; name: string; start: number; end: number }[];
}

describe("shards by label", () => {
  let client: KubeClient;
  let ns: string;
  const controllers: Controller<Widget>[] = [];
  const log: Log = { runs: [] };
  /** Objects whose reconcile takes long (a platform call under way) in shard a. */
  const slowInA = new Set<string>();
  const handoverMs = 1_500;

  function reconciler(shard: string): Reconciler<Widget> {
    return {
      async reconcile(obj) {
        const start = Date.now();
        if (shard === "a" && slowInA.has(obj.metadata.name ?? "")) await sleep(1_000);
        log.runs.push({ shard, name: obj.metadata.name ?? "", start, end: Date.now() });
        return Action.done();
      },
    };
  }

  async function shard(name: string, selector: string) {
    const controller = new Controller<Widget>(
      {
        kind: widgets,
        reconciler: reconciler(name),
        namespaces: [ns],
        shard: { selector: parseLabelSelector(selector), handoverMs },
      },
      { client },
    );
    controllers.push(controller);
    controller.startCaches();
    await controller.waitForSync();
    controller.startWorkers();
    return controller;
  }

  const widget = (name: string, label: string, size = 0): Widget => ({
    apiVersion: "runtime-test.neoncloud.dev/v1",
    kind: "Widget",
    metadata: { name, namespace: ns, labels: { [shardLabel]: label } },
    spec: { size },
  });
  const runsOf = (name: string) => log.runs.filter((r) => r.name === name);
  const relabel = (name: string, label: string) =>
    client.patch(
      widgets,
      ns,
      name,
      { metadata: { labels: { [shardLabel]: label } } },
      ContentType.MergePatch,
    );

  beforeAll(async () => {
    client = new KubeClient(loadKubeConfig(inject("kubeconfig")));
    await installCrd(client, widgets);
    ns = await createNamespace(client, "shards");
    const a = await shard("a", `${shardLabel}=a`);
    const b = await shard("b", `${shardLabel}!=a`);
    // Both cache every object, whichever shard it is in.
    expect([a.informer.store, b.informer.store].every((s) => s.list().length === 0)).toBe(true);
  });

  afterAll(async () => {
    await Promise.all(controllers.map((c) => c.stop()));
  });

  it("reconciles each object in the shard its label names, and caches all of them in both", async () => {
    await client.create(widgets, widget("one", "a"));
    await client.create(widgets, widget("two", "b"));
    await waitFor(() => runsOf("one").length > 0 && runsOf("two").length > 0, "both reconciled", 10_000);
    await sleep(300);
    expect(new Set(runsOf("one").map((r) => r.shard))).toEqual(new Set(["a"]));
    expect(new Set(runsOf("two").map((r) => r.shard))).toEqual(new Set(["b"]));
    for (const c of controllers)
      expect(
        c.informer.store
          .list()
          .map((o) => o.metadata.name)
          .sort(),
      ).toEqual(["one", "two"]);
  });

  it("a move during the old shard's reconcile: the new shard waits it out, and the old one lets go", async () => {
    slowInA.add("moving");
    await client.create(widgets, widget("moving", "a"));
    // Shard a is in its slow reconcile of it (1 s) when the label moves it to b.
    await sleep(300);
    const movedAt = Date.now();
    await relabel("moving", "b");
    await waitFor(() => runsOf("moving").some((r) => r.shard === "b"), "taken by shard b", 10_000);
    const inA = runsOf("moving").filter((r) => r.shard === "a");
    const firstInB = runsOf("moving").find((r) => r.shard === "b")!;
    expect(inA.length).toBeGreaterThan(0);
    // Never both at once, and not before the hand-over delay.
    for (const a of inA) expect(a.end <= firstInB.start || a.start >= firstInB.end).toBe(true);
    expect(firstInB.start - movedAt).toBeGreaterThanOrEqual(handoverMs - 100);

    // From then on, only shard b reconciles it.
    const before = runsOf("moving").length;
    await client.patch(widgets, ns, "moving", { spec: { size: 3 } }, ContentType.MergePatch);
    await waitFor(() => runsOf("moving").length > before, "reconciled after the change", 10_000);
    await sleep(300);
    expect(
      runsOf("moving")
        .slice(before)
        .every((r) => r.shard === "b"),
    ).toBe(true);
  });
});
