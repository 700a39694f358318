import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { KubeClient } from "./kube.ts";
import {
  createNamespace,
  installCrd,
  loadKubeConfig,
  widgetKind,
  type Widget,
} from "../../test/support/runtime/cluster.ts";
import { startTcpProxy, type TcpProxy } from "../../test/support/runtime/tcp-proxy.ts";

const widgets = widgetKind();

describe("KubeClient on the real API server", () => {
  let proxy: TcpProxy;
  let ns: string;

  beforeAll(async () => {
    const direct = new KubeClient(loadKubeConfig(inject("kubeconfig")));
    await installCrd(direct, widgets);
    ns = await createNamespace(direct, "kube-client");
    proxy = await startTcpProxy(new URL(direct.kubeConfig.getCurrentCluster()!.server));
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it("sends its requests over kept-alive connections, not a new TLS connection each", async () => {
    // Through the proxy, so every TCP connection the client opens is counted.
    const client = new KubeClient(loadKubeConfig(inject("kubeconfig"), proxy.url));
    const before = proxy.connections;
    for (let i = 0; i < 30; i++) {
      const widget: Widget = { metadata: { name: `w-${i}`, namespace: ns }, spec: { size: i } };
      await client.create(widgets, {
        apiVersion: "runtime-test.neoncloud.dev/v1",
        kind: "Widget",
        ...widget,
      });
      expect((await client.get<Widget>(widgets, ns, `w-${i}`))?.spec?.size).toBe(i);
    }
    // 60 requests one after another; a connection per request (as before) would be 60.
    expect(proxy.connections - before).toBeLessThanOrEqual(2);
  });
});
