import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Informer } from "./informer.ts";
import { KubeClient } from "./kube.ts";
import {
  createNamespace,
  installCrd,
  loadKubeConfig,
  waitFor,
  widgetKind,
  type Widget,
} from "../../test/support/runtime/cluster.ts";

const widgets = widgetKind();

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
}
type WithManagedFields = Widget & { metadata: { managedFields?: ManagedFieldsEntry[] } };

describe("what an informer caches", () => {
  let client: KubeClient;
  let ns: string;
  const informers: Informer<WithManagedFields>[] = [];

  beforeAll(async () => {
    client = new KubeClient(loadKubeConfig(inject("kubeconfig")));
    await installCrd(client, widgets);
    ns = await createNamespace(client, "transform");
  });
  afterAll(async () => {
    await Promise.all(informers.map((i) => i.stop()));
  });

  it("keeps objects without managedFields, and a write from the cached copy leaves the server's intact", async () => {
    await client.create(widgets, {
      apiVersion: "runtime-test.neoncloud.dev/v1",
      kind: "Widget",
      metadata: { name: "listed", namespace: ns },
      spec: { size: 1 },
    });
    const informer = new Informer<WithManagedFields>(client, widgets, { namespaces: [ns] });
    informers.push(informer);
    informer.start();
    await informer.waitForSync();
    // One object from the list, one from the watch.
    await client.create(widgets, {
      apiVersion: "runtime-test.neoncloud.dev/v1",
      kind: "Widget",
      metadata: { name: "watched", namespace: ns },
      spec: { size: 1 },
    });
    await waitFor(() => informer.get(ns, "watched") !== undefined, "the watched widget in the cache");

    for (const name of ["listed", "watched"]) {
      const stored = await client.get<WithManagedFields>(widgets, ns, name);
      const managers = (stored?.metadata.managedFields ?? []).map((e) => e.manager);
      expect(managers.length).toBeGreaterThan(0);
      const cached = informer.get(ns, name)!;
      expect(cached.metadata.managedFields).toBeUndefined();
      expect(cached.spec?.size).toBe(1);

      // A PUT of the cached copy (as the ConfigMap publisher does) must not wipe field ownership.
      await client.replace(widgets, { ...cached, spec: { size: 2 } });
      const after = await client.get<WithManagedFields>(widgets, ns, name);
      expect(after?.spec?.size).toBe(2);
      expect((after?.metadata.managedFields ?? []).map((e) => e.manager)).toEqual(
        expect.arrayContaining(managers),
      );
    }
  });
});
