// Connection publishing (withConnectionPublishing): the layer writes the connection details a
// kind's observation gives, and does nothing else with them. The Secret is written whole (a reader
// sees the old data or the new, never a mix) only when the kind gives its data; a Secret the
// resource wrote earlier under another name is deleted, so no stale copy of a password stays
// behind; a Secret or ConfigMap of that name that the resource does not own is refused. The
// ConfigMap is written after the Secret, so both never tell a client different things.
import {
  isControlledBy,
  type KubeClient,
  type KubeObject,
  type ResourceKind,
  type Store,
} from "../../runtime/index.ts";
import { configMapKind, publishConfigMap, type ConfigMap } from "./connection-configmap.ts";
import { secretKind, type Secret } from "./credentials.ts";
import type { ConnectionDetails } from "./kind.ts";
import { adoptSecret, checkOwnership, writeOwnedSecret, type Owner } from "./owned-secret.ts";

/** The status field naming the connection Secret last written (`status.connectionSecret.name`). */
export interface PublishedStatus {
  connectionSecret?: { name?: string | undefined } | undefined;
}

export interface PublishingPass {
  obj: KubeObject & { apiVersion: string; kind: string };
  status: PublishedStatus;
  kube: KubeClient;
  cache<U extends KubeObject>(kind: ResourceKind): Store<U>;
  events: { normal(reason: string, action: string, note: string): void };
}

/**
 * Writes `details`; answers the status fields it settles (`connectionSecret` removed when the spec
 * no longer asks for a Secret).
 */
export async function publish(
  pass: PublishingPass,
  details: ConnectionDetails | undefined,
): Promise<PublishedStatus> {
  const owner: Owner = pass.obj;
  const namespace = owner.metadata.namespace;
  const wanted = details?.secret;
  const settled: PublishedStatus = {};
  const previous = pass.status.connectionSecret?.name;
  if (previous !== undefined && previous !== wanted?.name) {
    const old = pass.cache<Secret>(secretKind).get(namespace, previous);
    if (old && isControlledBy(old, owner)) await pass.kube.delete(secretKind, namespace, previous);
    if (wanted === undefined) settled.connectionSecret = undefined;
  }
  if (wanted) {
    const secret = pass.cache<Secret>(secretKind).get(namespace, wanted.name);
    checkOwnership(secret, owner, wanted.field);
    // Left without owner by a restore: this resource's again.
    if (secret && !isControlledBy(secret, owner)) await adoptSecret(pass.kube, owner, secret);
    if (wanted.data) {
      await writeOwnedSecret(pass.kube, owner, wanted.name, wanted.data, wanted.annotations ?? {});
      pass.events.normal(
        "ConnectionSecretWritten",
        "WriteSecret",
        wanted.note ?? `wrote Secret ${wanted.name}`,
      );
    }
  }
  if (details?.configMap) {
    const { name, data } = details.configMap;
    const existing = pass.cache<ConfigMap>(configMapKind).get(namespace, name);
    await publishConfigMap(pass.kube, owner, name, data, existing);
  }
  return settled;
}
