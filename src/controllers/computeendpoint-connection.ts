// Connection details published to a ConfigMap the ComputeEndpoint owns, so
// applications can mount or envFrom them. No credentials: those stay with the
// platform's roles and the user's own Secrets.
import type { ComputeEndpointStatus } from "../api/computeendpoint.ts";
import { apiVersion } from "../api/group.ts";
import { jsonEqual, type KubeClient, type KubeObject } from "../runtime/index.ts";

export const configMapKind = { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" } as const;

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

export function connectionData(
  projectId: string,
  status: Pick<ComputeEndpointStatus, "endpointId" | "host" | "pooledHost" | "branchId" | "regionId">,
): Record<string, string> {
  return {
    host: status.host ?? "",
    pooledHost: status.pooledHost ?? "",
    port: "5432",
    endpointId: status.endpointId ?? "",
    projectId,
    branchId: status.branchId ?? "",
    regionId: status.regionId ?? "",
    sslmode: "require",
  };
}

/** Creates or updates the ConfigMap; writes nothing when it already says the same. */
export async function publishConnection(
  client: KubeClient,
  owner: KubeObject & { metadata: { name?: string; namespace?: string; uid?: string } },
  name: string,
  data: Record<string, string>,
  existing: ConfigMap | undefined,
): Promise<void> {
  const ownerReference = {
    apiVersion,
    kind: "ComputeEndpoint",
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
  const labels = { "app.kubernetes.io/managed-by": "neon-cloud-operator" };
  if (!existing) {
    await client.create<ConfigMap>(configMapKind, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: owner.metadata.namespace, labels, ownerReferences: [ownerReference] },
      data,
    });
    return;
  }
  const owned = (existing.metadata.ownerReferences ?? []).some((r) => r.uid === ownerReference.uid);
  if (!owned) {
    throw new Error(
      `ConfigMap ${owner.metadata.namespace}/${name} exists and is not owned by this ComputeEndpoint; refusing to overwrite it`,
    );
  }
  if (jsonEqual(existing.data ?? {}, data)) return;
  await client.replace<ConfigMap>(configMapKind, { ...existing, data });
}
