// A metadata-only informer asks the API server for PartialObjectMetadata: a
// Secret's data never crosses the wire, and its watch events still arrive.
// Proven through the API proxy, which keeps what the server answered.
import { randomBytes } from "node:crypto";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Informer } from "./informer.ts";
import { ContentType, KubeClient, metadataOnlyAccept, type KubeObject } from "./kube.ts";
import { startApiProxy, type ApiProxy } from "../../test/support/api-proxy.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../../test/support/kube.ts";
import { serviceAccountKubeconfigVia } from "../../test/support/operator-process.ts";

const secrets = { group: "", version: "v1", plural: "secrets", kind: "Secret" };
type Secret = KubeObject & { data?: Record<string, string> };

let proxy: ApiProxy;
let namespace: string;
let client: KubeClient;
const informers: Informer<Secret>[] = [];

/** A value no answer should carry, and its base64 form as a Secret's `data` holds it. */
function marker(): { plain: string; encoded: string } {
  const plain = `not-a-key-${randomBytes(12).toString("hex")}`;
  return { plain, encoded: Buffer.from(plain).toString("base64") };
}

async function createSecret(name: string, value: string): Promise<void> {
  await client.create(secrets, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace },
    data: { "tls.key": Buffer.from(value).toString("base64") },
  });
}

function start(options: { metadataOnly?: boolean }): Informer<Secret> {
  const informer = new Informer<Secret>(client, secrets, { namespaces: [namespace], ...options });
  informers.push(informer);
  informer.start();
  return informer;
}

beforeAll(async () => {
  proxy = await startApiProxy(adminKubeConfig());
  namespace = await createNamespace("metadata-only");
  const kc = new KubeConfig();
  kc.loadFromFile(await serviceAccountKubeconfigVia(proxy.url, namespace));
  client = new KubeClient(kc);
});

afterAll(async () => {
  await Promise.all(informers.map((i) => i.stop()));
  await proxy?.close();
  await kubectl(["delete", "namespace", namespace, "--wait=false"]).catch(() => undefined);
});

describe("a metadata-only informer of Secrets", () => {
  it("syncs a namespace with no Secret (the API server answers items: null)", async () => {
    const empty = await createNamespace("metadata-empty");
    try {
      const admin = new KubeClient(adminKubeConfig());
      const informer = new Informer<Secret>(admin, secrets, { namespaces: [empty], metadataOnly: true });
      informers.push(informer);
      informer.start();
      await eventually(() => (informer.synced ? true : undefined), { what: "the informer synced" });
      expect(informer.list()).toEqual([]);
    } finally {
      await kubectl(["delete", "namespace", empty, "--wait=false"]).catch(() => undefined);
    }
  });

  it("is answered metadata only, on list and watch, and still sees adds, changes and deletes", async () => {
    const listed = marker();
    const watched = marker();
    await createSecret("listed", listed.plain);
    const tap = proxy.tap({ method: "GET", path: new RegExp(`/namespaces/${namespace}/secrets$`) });
    const informer = start({ metadataOnly: true });
    await informer.waitForSync();

    await createSecret("watched", watched.plain);
    await eventually(() => informer.get(namespace, "watched"), { what: "the watched Secret's ADDED" });
    await client.patch(
      secrets,
      namespace,
      "listed",
      { metadata: { labels: { seen: "yes" } } },
      ContentType.MergePatch,
    );
    await eventually(() => (informer.get(namespace, "listed")?.metadata.labels?.seen ? true : undefined), {
      what: "the label change's MODIFIED",
    });
    await client.delete(secrets, namespace, "watched");
    await eventually(() => (informer.get(namespace, "watched") ? undefined : true), {
      what: "the DELETED",
    });

    // It asked for metadata, on the list and on the watch.
    expect(tap.requests.filter((r) => !r.watch).map((r) => r.accept)).toEqual([metadataOnlyAccept.list]);
    expect(tap.requests.filter((r) => r.watch).map((r) => r.accept)).toContain(metadataOnlyAccept.watch);
    // The answers named both Secrets, and carried neither one's data.
    expect(tap.carried('"name":"listed"')).toBe(true);
    expect(tap.carried('"name":"watched"')).toBe(true);
    expect(tap.carried("PartialObjectMetadata")).toBe(true);
    for (const m of [listed, watched]) {
      expect(tap.carried(m.encoded)).toBe(false);
      expect(tap.carried(m.plain)).toBe(false);
    }
    expect(tap.carried('"data"')).toBe(false);
    tap.remove();

    // Cached as Secrets with their metadata, nothing more.
    const cached = informer.get(namespace, "listed")!;
    expect(Object.keys(cached).sort()).toEqual(["apiVersion", "kind", "metadata"]);
    expect(cached).toMatchObject({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "listed", namespace },
    });
    expect(cached.metadata).not.toHaveProperty("managedFields");
  });

  it("keeps no copy of a Secret that client-side `kubectl apply` copied into its own metadata", async () => {
    const value = marker();
    const tap = proxy.tap({ method: "GET", path: new RegExp(`/namespaces/${namespace}/secrets$`) });
    const informer = start({ metadataOnly: true });
    await informer.waitForSync();
    await kubectl(["apply", "-n", namespace, "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "applied", annotations: { team: "b" } },
        stringData: { "tls.key": value.plain },
      }),
    });
    const cached = await eventually(() => informer.get(namespace, "applied"), { what: "the applied Secret" });
    // kubectl's last-applied annotation is metadata to the API server: it crosses the wire (the one
    // way a metadata-only watch still sees Secret data; docs/security.md), and is dropped on arrival.
    expect(tap.carried(value.plain)).toBe(true);
    expect(cached.metadata.annotations).toEqual({ team: "b" });
    expect(JSON.stringify(cached)).not.toContain(value.plain);
    tap.remove();
  });

  it("while a whole-object informer's answers carry the data (the tap sees it when it is sent)", async () => {
    const value = marker();
    await createSecret("whole", value.plain);
    const tap = proxy.tap({ method: "GET", path: new RegExp(`/namespaces/${namespace}/secrets$`) });
    const informer = start({});
    await informer.waitForSync();
    expect(informer.get(namespace, "whole")?.data?.["tls.key"]).toBe(value.encoded);
    expect(tap.requests.filter((r) => !r.watch).map((r) => r.accept)).toEqual(["application/json"]);
    expect(tap.carried(value.encoded)).toBe(true);
    tap.remove();
  });
});
