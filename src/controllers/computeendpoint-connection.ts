// Connection details published to a ConfigMap the ComputeEndpoint owns, so
// applications can mount or envFrom them. No credentials: those stay with the
// platform's roles and the user's own Secrets.
import type { ComputeEndpointStatus } from "../api/computeendpoint.ts";
import { apiVersion, fieldManager } from "../api/group.ts";
import { controllerReference, jsonEqual, type KubeClient, type KubeObject } from "../runtime/index.ts";
import { Problem } from "./managed/failures.ts";

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

/**
 * Writes the ConfigMap with server-side apply under the operator's field manager (a stale cache
 * cannot turn into a create conflict); writes nothing when the cached copy already says the same.
 * Refuses a ConfigMap of that name that this ComputeEndpoint does not own.
 */
export async function publishConnection(
  client: KubeClient,
  owner: KubeObject & { metadata: { name?: string; namespace?: string; uid?: string } },
  name: string,
  data: Record<string, string>,
  existing: ConfigMap | undefined,
): Promise<void> {
  if (existing) {
    const owned = (existing.metadata.ownerReferences ?? []).some((r) => r.uid === owner.metadata.uid);
    if (!owned) {
      throw new Problem(
        "ConfigMapConflict",
        `ConfigMap ${owner.metadata.namespace}/${name} exists and is not owned by this ComputeEndpoint; refusing to overwrite it`,
        { retryAfterMs: 60_000 },
      );
    }
    if (jsonEqual(existing.data ?? {}, data)) return;
  }
  await client.apply<ConfigMap>(
    configMapKind,
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name,
        namespace: owner.metadata.namespace,
        labels: { "app.kubernetes.io/managed-by": "neon-cloud-operator" },
        ownerReferences: [controllerReference({ ...owner, apiVersion, kind: "ComputeEndpoint" })],
      },
      data,
    },
    fieldManager,
  );
}
