// Helpers for the runtime's tests on the real API server: a client from the
// test kubeconfig (optionally through a proxy) and a throwaway Widget CRD.
import { KubeConfig } from "@kubernetes/client-node";
import type { KubeClient, KubeObject, ResourceKind } from "../../../src/runtime/kube.ts";

export function loadKubeConfig(path: string, serverOverride?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  if (serverOverride) {
    const current = kc.getCurrentCluster();
    if (!current) throw new Error("kubeconfig has no current cluster");
    kc.clusters = kc.clusters.map((c) => (c.name === current.name ? { ...c, server: serverOverride } : c));
  }
  return kc;
}

export const crdKind: ResourceKind = {
  group: "apiextensions.k8s.io",
  version: "v1",
  plural: "customresourcedefinitions",
  kind: "CustomResourceDefinition",
  namespaced: false,
};

export const namespaceKind: ResourceKind = {
  group: "",
  version: "v1",
  plural: "namespaces",
  kind: "Namespace",
  namespaced: false,
};

export interface Widget extends KubeObject {
  spec?: { size?: number; note?: string };
  status?: Record<string, unknown>;
}

/** Short leader-election timings for tests of replicas (testing/replica.ts). */
export const replicaElection = {
  name: "runtime-test-operator",
  leaseDurationMs: 3_000,
  renewDeadlineMs: 2_000,
  retryPeriodMs: 250,
};

/** A namespaced test kind with a status subresource: group runtime-test.neoncloud.dev. */
export function widgetKind(plural = "widgets", kind = "Widget"): ResourceKind {
  return { group: "runtime-test.neoncloud.dev", version: "v1", plural, kind };
}

export async function installCrd(client: KubeClient, kind: ResourceKind): Promise<void> {
  const name = `${kind.plural}.${kind.group}`;
  const crd = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name },
    spec: {
      group: kind.group,
      names: { plural: kind.plural, singular: kind.kind.toLowerCase(), kind: kind.kind },
      scope: "Namespaced",
      versions: [
        {
          name: kind.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
                status: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
              },
            },
          },
        },
      ],
    },
  };
  if (!(await client.get(crdKind, undefined, name))) await client.create(crdKind, crd);
  await waitFor(async () => {
    const got = await client.get<
      KubeObject & { status?: { conditions?: { type: string; status: string }[] } }
    >(crdKind, undefined, name);
    const established = got?.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
    if (!established) return false;
    // Established can precede the resource being served; list once to be sure.
    try {
      await client.list(kind, { limit: 1 });
      return true;
    } catch {
      return false;
    }
  }, `CRD ${name} established`);
}

export async function createNamespace(client: KubeClient, prefix: string): Promise<string> {
  const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
  await client.create(namespaceKind, { metadata: { name } });
  return name;
}

/** Polls `check` until it returns true; fails with `what` after `timeoutMs`. */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
