// The foundation's smoke scenarios: the local control plane is a real
// Kubernetes API server, with everything an operator relies on.
import { join } from "node:path";
import {
  ApiException,
  CustomObjectsApi,
  PatchStrategy,
  Watch,
  setHeaderOptions,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";

const group = "smoke.neoncloud.dev";
const version = "v1";
const plural = "gadgets";

interface Gadget extends KubernetesObject {
  spec: { size: number; color?: string };
  status?: { phase?: string };
}

const kc = adminKubeConfig();
const api = kc.makeApiClient(CustomObjectsApi);
let namespace: string;

function gadget(name: string, size: number): string {
  return JSON.stringify({
    apiVersion: `${group}/${version}`,
    kind: "Gadget",
    metadata: { name, namespace },
    spec: { size },
  });
}

async function get(name: string): Promise<Gadget> {
  return (await api.getNamespacedCustomObject({ group, version, namespace, plural, name })) as Gadget;
}

function statusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

beforeAll(async () => {
  await kubectl(["apply", "-f", join(import.meta.dirname, "..", "fixtures", "gadgets-crd.yaml")]);
  await kubectl(["wait", "--for=condition=Established", "--timeout=60s", `crd/${plural}.${group}`]);
  namespace = await createNamespace("smoke");
});

afterAll(async () => {
  await kubectl(["delete", "namespace", namespace, "--wait=false"]);
});

describe("a real Kubernetes API server", () => {
  it("reports a current Kubernetes release", async () => {
    const out = JSON.parse(await kubectl(["version", "-o", "json"])) as {
      serverVersion: { major: string; minor: string; gitVersion: string };
    };
    expect(Number(out.serverVersion.major)).toBe(1);
    expect(Number.parseInt(out.serverVersion.minor, 10)).toBeGreaterThanOrEqual(34);
  });

  it("delivers an object created with kubectl apply to a client-node watch", async () => {
    const seen: string[] = [];
    const watch = new Watch(kc);
    // Right after a CRD is established its watch cache is still initializing
    // and the server answers 429: a client retries, as every informer must.
    const open = async (): Promise<AbortController> => {
      for (let attempt = 0; ; attempt++) {
        let ended: unknown;
        const controller = await watch.watch(
          `/apis/${group}/${version}/namespaces/${namespace}/${plural}`,
          {},
          (phase, obj: Gadget) => seen.push(`${phase} ${obj.metadata?.name}`),
          (err: unknown) => (ended = err ?? "closed"),
        );
        await new Promise((r) => setTimeout(r, 300));
        if (!ended) return controller;
        if (attempt > 50) throw new Error("watch keeps ending", { cause: ended });
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const controller = await open();
    try {
      await kubectl(["apply", "-f", "-"], { input: gadget("watched", 2) });
      await eventually(() => (seen.includes("ADDED watched") ? true : undefined), { what: "ADDED event" });
    } finally {
      controller.abort();
    }
  });

  it("writes status only through the status subresource", async () => {
    await kubectl(["apply", "-f", "-"], { input: gadget("with-status", 3) });
    const current = await get("with-status");
    await api.replaceNamespacedCustomObjectStatus({
      group,
      version,
      namespace,
      plural,
      name: "with-status",
      body: { ...current, status: { phase: "Ready" } },
    });
    expect((await get("with-status")).status?.phase).toBe("Ready");

    // A write of the main resource ignores status, as the subresource promises.
    const after = await get("with-status");
    await api.replaceNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      name: "with-status",
      body: { ...after, spec: { size: 4 }, status: { phase: "Overwritten" } },
    });
    const final = await get("with-status");
    expect(final.spec.size).toBe(4);
    expect(final.status?.phase).toBe("Ready");
  });

  it("refuses an update from a stale resourceVersion with 409", async () => {
    await kubectl(["apply", "-f", "-"], { input: gadget("contended", 1) });
    const stale = await get("contended");
    await api.replaceNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      name: "contended",
      body: { ...stale, spec: { size: 2 } },
    });
    const err = await api
      .replaceNamespacedCustomObject({
        group,
        version,
        namespace,
        plural,
        name: "contended",
        body: { ...stale, spec: { size: 3 } },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(statusOf(err)).toBe(409);
    expect((await get("contended")).spec.size).toBe(2);
  });

  it("holds deletion while a finalizer is present, and deletes once it is removed", async () => {
    await kubectl(["apply", "-f", "-"], { input: gadget("finalized", 1) });
    await api.patchNamespacedCustomObject(
      {
        group,
        version,
        namespace,
        plural,
        name: "finalized",
        body: [
          { op: "test", path: "/metadata/finalizers", value: null },
          { op: "add", path: "/metadata/finalizers", value: ["smoke.neoncloud.dev/hold"] },
        ],
      },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    // By its full name: another test installs a gadgets kind of another group at the same time.
    await kubectl(["delete", `${plural}.${group}`, "finalized", "-n", namespace, "--wait=false"]);
    const held = await get("finalized");
    expect(held.metadata?.deletionTimestamp).toBeDefined();

    await api.patchNamespacedCustomObject(
      {
        group,
        version,
        namespace,
        plural,
        name: "finalized",
        body: [
          { op: "test", path: "/metadata/finalizers", value: ["smoke.neoncloud.dev/hold"] },
          { op: "remove", path: "/metadata/finalizers" },
        ],
      },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    await eventually(
      async () => {
        try {
          await get("finalized");
          return undefined;
        } catch (err) {
          return statusOf(err) === 404 ? true : undefined;
        }
      },
      { what: "the object to be gone" },
    );
  });

  it("rejects an object that breaks the schema, naming the field", async () => {
    await expect(kubectl(["apply", "-f", "-"], { input: gadget("too-big", 99) })).rejects.toThrow(
      /spec\.size.*(less than or equal to 8|should be less)/,
    );
    await expect(get("too-big")).rejects.toBeInstanceOf(ApiException);
  });

  it("garbage-collects an object whose owner is deleted", async () => {
    await kubectl(["apply", "-f", "-"], { input: gadget("owner", 1) });
    const owner = await get("owner");
    await kubectl(["apply", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: "owned",
          namespace,
          ownerReferences: [
            { apiVersion: `${group}/${version}`, kind: "Gadget", name: "owner", uid: owner.metadata?.uid },
          ],
        },
        data: { a: "b" },
      }),
    });
    await kubectl(["delete", `${plural}.${group}`, "owner", "-n", namespace]);
    await eventually(
      async () => {
        const out = await kubectl([
          "get",
          "configmap",
          "owned",
          "-n",
          namespace,
          "--ignore-not-found",
          "-o",
          "name",
        ]);
        return out.trim() === "" ? true : undefined;
      },
      { what: "the owned ConfigMap to be collected", timeoutMs: 60_000, intervalMs: 500 },
    );
  });
});
