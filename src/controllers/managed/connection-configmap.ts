// Connection details a resource publishes to a ConfigMap it owns, so applications can mount or
// envFrom them. No credentials: those go to the connection Secret (connection-secret.ts).
import { fieldManager } from "../../api/group.ts";
import { controllerReference, jsonEqual, type KubeClient, type KubeObject } from "../../runtime/index.ts";
import type { Owner } from "./owned-secret.ts";
import { Refusal } from "./refusal.ts";

export const configMapKind = { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" } as const;

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

/**
 * Writes the ConfigMap with server-side apply under the operator's field manager (a stale cache
 * cannot turn into a create conflict); writes nothing when the cached copy already says the same.
 * Refuses a ConfigMap of that name that this resource does not own.
 */
export async function publishConfigMap(
  client: KubeClient,
  owner: Owner,
  name: string,
  data: Record<string, string>,
  existing: ConfigMap | undefined,
): Promise<void> {
  if (existing) {
    const owned = (existing.metadata.ownerReferences ?? []).some((r) => r.uid === owner.metadata.uid);
    if (!owned) {
      throw new Refusal(
        "ConfigMapConflict",
        "outside",
        `ConfigMap ${owner.metadata.namespace}/${name} exists and is not owned by this ${owner.kind}; refusing to overwrite it`,
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
        ownerReferences: [controllerReference(owner)],
      },
      data,
    },
    fieldManager,
  );
}
