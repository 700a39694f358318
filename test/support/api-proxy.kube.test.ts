// The API proxy in front of the real API server: requests pass with the
// client's own token, and a rule holds, fails or drops exactly the requests
// it matches.
import { HttpMethod, KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeApiError, KubeClient, KubeUnreachableError } from "../../src/runtime/index.ts";
import { startApiProxy, type ApiProxy } from "./api-proxy.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "./kube.ts";
import { serviceAccountKubeconfigVia } from "./operator-process.ts";

let proxy: ApiProxy;
let namespace: string;
let client: KubeClient;
const configMaps = { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" };

beforeAll(async () => {
  proxy = await startApiProxy(adminKubeConfig());
  namespace = await createNamespace("api-proxy");
  const kc = new KubeConfig();
  kc.loadFromFile(await serviceAccountKubeconfigVia(proxy.url, namespace));
  client = new KubeClient(kc, { requestTimeoutMs: 5_000 });
});

afterAll(async () => {
  await proxy?.close();
  await kubectl(["delete", "namespace", namespace, "--wait=false"]).catch(() => undefined);
});

const configMap = (name: string) => ({ metadata: { name, namespace }, data: { a: "1" } });

describe("the API proxy", () => {
  it("passes requests through with the client's own identity, and logs them without bodies", async () => {
    await client.create(configMaps, configMap("through"));
    const read = await client.get(configMaps, namespace, "through");
    expect(read?.metadata.name).toBe("through");
    const entry = proxy.log.find((e) => e.method === "POST" && e.path.endsWith("/configmaps"));
    expect(entry).toEqual({
      method: "POST",
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      outcome: "forwarded",
      status: 201,
    });
    // The ServiceAccount may act in its namespace only: the token, not the proxy, decides.
    await expect(client.get(configMaps, "kube-system", "anything")).rejects.toMatchObject({
      statusCode: 403,
    });
  });

  it("holds a matching request until released: nothing reaches the server meanwhile", async () => {
    const rule = proxy.arm({ method: "POST", path: /\/configmaps$/, body: /"held"/, action: "hold" });
    const write = client.create(configMaps, configMap("held"));
    const held = await rule.hit;
    expect(held.path).toBe(`/api/v1/namespaces/${namespace}/configmaps`);
    expect(await kubectl(["get", "configmap", "held", "-n", namespace, "--ignore-not-found"])).toBe("");
    // Other requests pass meanwhile.
    await client.create(configMaps, configMap("other"));
    held.release();
    await write;
    rule.remove();
    expect(await kubectl(["get", "configmap", "held", "-n", namespace, "-o", "name"])).toContain("held");
  });

  it("discards a held request whose client goes away", async () => {
    const rule = proxy.arm({ method: "POST", path: /\/configmaps$/, action: "hold" });
    const abort = new AbortController();
    const write = client.request(HttpMethod.POST, `/api/v1/namespaces/${namespace}/configmaps`, {
      body: configMap("abandoned"),
      signal: abort.signal,
    });
    await rule.hit;
    abort.abort();
    await expect(write).rejects.toThrow();
    await eventually(() => (rule.held.length === 0 ? true : undefined), { what: "the discard" });
    rule.remove();
    expect(proxy.log.at(-1)).toMatchObject({ method: "POST", outcome: "discarded" });
    expect(await kubectl(["get", "configmap", "abandoned", "-n", namespace, "--ignore-not-found"])).toBe("");
  });

  it("fails or drops matching requests, as many times as told", async () => {
    const fail = proxy.arm({
      method: "GET",
      path: /\/configmaps\/through$/,
      action: "fail",
      status: 503,
      times: 1,
    });
    const failed = await client.get(configMaps, namespace, "through").catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(KubeApiError);
    expect((failed as KubeApiError).statusCode).toBe(503);
    expect(await client.get(configMaps, namespace, "through")).toBeDefined();
    fail.remove();

    const drop = proxy.arm({ method: "GET", path: /\/configmaps\/through$/, action: "drop", times: 1 });
    await expect(client.get(configMaps, namespace, "through")).rejects.toBeInstanceOf(KubeUnreachableError);
    drop.remove();
    expect(proxy.log.filter((e) => e.outcome === "dropped")).toHaveLength(1);
  });
});
