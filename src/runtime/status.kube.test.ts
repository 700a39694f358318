// Status writes on the real API server: by default a write lands whatever happened since the
// object was read (no lost-update races on conditions); with a precondition, a write computed
// from an object someone has changed since is refused, so a late write of a replica that lost
// its leadership cannot overwrite intent that crash safety depends on.
import { beforeAll, describe, expect, inject, it } from "vitest";
import { KubeApiError, KubeClient } from "./kube.ts";
import { StatusWriter } from "./status.ts";
import {
  createNamespace,
  installCrd,
  loadKubeConfig,
  widgetKind,
  type Widget,
} from "../../test/support/runtime/cluster.ts";

const widgets = widgetKind();
let client: KubeClient;
let ns: string;

beforeAll(async () => {
  client = new KubeClient(loadKubeConfig(inject("kubeconfig")));
  await installCrd(client, widgets);
  ns = await createNamespace(client, "status-writes");
});

async function widget(name: string): Promise<Widget> {
  return client.create<Widget>(widgets, {
    apiVersion: "runtime-test.neoncloud.dev/v1",
    kind: "Widget",
    metadata: { name, namespace: ns },
    spec: { size: 1 },
  });
}

describe("status writes", () => {
  it("a write with a precondition is refused when the object changed since it was read", async () => {
    const writer = new StatusWriter(client, widgets);
    const read = await widget("intent");
    // Another replica (the new leader) records its intent meanwhile.
    const newer = await writer.patch(read, { pending: "key-new" }, { precondition: true });
    expect(newer.status).toEqual({ pending: "key-new" });
    // The old leader's late write, computed from what it read before, must not land.
    const late = writer.patch(read, { pending: "key-old" }, { precondition: true });
    await expect(late).rejects.toBeInstanceOf(KubeApiError);
    await expect(late).rejects.toMatchObject({ statusCode: 409 });
    expect((await client.get<Widget>(widgets, ns, "intent"))?.status).toEqual({ pending: "key-new" });
  });

  it("a write without one lands on the newest object", async () => {
    const writer = new StatusWriter(client, widgets);
    const read = await widget("conditions");
    await writer.patch(read, { a: 1 });
    const written = await writer.patch(read, { b: 2 });
    expect(written.status).toEqual({ a: 1, b: 2 });
  });
});
