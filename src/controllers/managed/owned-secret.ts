// The Secrets a resource owns (an ApiKey's key, a connection Secret): written whole by
// server-side apply under the operator's field manager, controlled by the resource so they go
// with it, and labelled with it, so that a Secret a restore left without owner references
// (Velero strips them; the resource comes back with a new UID) is known as the resource's own
// and taken back, and a Secret the resource leaves behind (Retain) is released, not deleted.
import { fieldManager, group } from "../../api/group.ts";
import {
  ContentType,
  controllerReference,
  isControlledBy,
  KubeApiError,
  type KubeClient,
  type KubeObject,
} from "../../runtime/index.ts";
import { secretKind, type Secret } from "./credentials.ts";
import { Refusal } from "./refusal.ts";

/** A resource that owns what the layer writes for it: its kind and apiVersion are known. */
export type Owner = KubeObject & { apiVersion: string; kind: string };

export const managedByLabel = "app.kubernetes.io/managed-by";
export const managedByValue = "neon-cloud-operator";

/** The label naming the owner: `neoncloud.dev/<kind>: <name>`. */
export const ownerLabel = (kind: string): string => `${group}/${kind.toLowerCase()}`;

/** Writes the Secret whole: a reader sees the old data or the new, never a mix. */
export async function writeOwnedSecret(
  client: KubeClient,
  owner: Owner,
  name: string,
  data: Record<string, string>,
  annotations: Record<string, string>,
  labels: Readonly<Record<string, string>> = {},
): Promise<void> {
  const secret: Secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      namespace: owner.metadata.namespace,
      labels: {
        [managedByLabel]: managedByValue,
        [ownerLabel(owner.kind)]: owner.metadata.name ?? "",
        ...labels,
      },
      annotations,
      ownerReferences: [controllerReference(owner)],
    },
    type: "Opaque",
    data: Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "utf8").toString("base64")]),
    ),
  };
  await client.apply<Secret>(secretKind, secret, fieldManager);
}

/**
 * The resource may write this Secret: it controls it, or (with `restored`) no controller owns it
 * and it is labelled as this resource's (what a restore from a backup leaves, or a Secret an
 * owner of this name retained).
 */
export function adoptable(secret: KubeObject, owner: Owner, restored = false): boolean {
  if (isControlledBy(secret, owner)) return true;
  return (
    restored &&
    !(secret.metadata.ownerReferences ?? []).some((r) => r.controller) &&
    secret.metadata.labels?.[ownerLabel(owner.kind)] === owner.metadata.name &&
    secret.metadata.labels?.[managedByLabel] === managedByValue
  );
}

/**
 * Refuses a Secret the resource may not write (not `adoptable`, so with `restored` one a restore
 * left without owner is written and adopted): overwriting it could lose someone's data. `field`
 * names the Secret in the spec, for the message.
 */
export function checkOwnership(
  secret: KubeObject | undefined,
  owner: Owner,
  field: string,
  restored = true,
): void {
  if (secret && !adoptable(secret, owner, restored)) {
    throw new Refusal(
      "SecretConflict",
      "outside",
      `Secret ${owner.metadata.namespace}/${secret.metadata.name} exists and is not controlled by this ${owner.kind}; ` +
        `delete it or choose another ${field}`,
    );
  }
}

/**
 * Makes `owner` the controller of an adoptable Secret: a JSON patch that first tests the
 * resourceVersion it decided on, so a Secret changed meanwhile is not taken (409/422: look again).
 */
export async function adoptSecret(client: KubeClient, owner: Owner, secret: Secret): Promise<void> {
  const refs = secret.metadata.ownerReferences;
  await client.patch(
    secretKind,
    owner.metadata.namespace,
    secret.metadata.name ?? "",
    [
      { op: "test", path: "/metadata/resourceVersion", value: secret.metadata.resourceVersion },
      refs
        ? { op: "add", path: "/metadata/ownerReferences/-", value: controllerReference(owner) }
        : { op: "add", path: "/metadata/ownerReferences", value: [controllerReference(owner)] },
    ],
    ContentType.JsonPatch,
  );
}

/**
 * The Secret outlives its owner (Retain): its owner reference goes. A JSON patch that first tests
 * the entry it removes (an update of the whole Secret would need the `update` verb and could
 * write back a stale copy of its data).
 */
export async function releaseSecret(client: KubeClient, owner: KubeObject, name: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const secret = await client.get<Secret>(secretKind, owner.metadata.namespace, name);
    if (!secret || !isControlledBy(secret, owner)) return;
    const index = (secret.metadata.ownerReferences ?? []).findIndex((r) => r.uid === owner.metadata.uid);
    try {
      await client.patch(
        secretKind,
        owner.metadata.namespace,
        name,
        [
          { op: "test", path: `/metadata/ownerReferences/${index}/uid`, value: owner.metadata.uid },
          { op: "remove", path: `/metadata/ownerReferences/${index}` },
        ],
        ContentType.JsonPatch,
      );
      return;
    } catch (err) {
      // The list changed between the read and the patch (the test failed: 422): read again.
      if (err instanceof KubeApiError && err.statusCode === 422 && attempt < 4) continue;
      throw err;
    }
  }
}

/** Deletes the Secret now if the resource controls it, rather than whenever the garbage collector gets to it. */
export async function deleteOwnedSecret(client: KubeClient, owner: KubeObject, name: string): Promise<void> {
  const secret = await client.get<Secret>(secretKind, owner.metadata.namespace, name);
  if (secret && isControlledBy(secret, owner))
    await client.delete(secretKind, owner.metadata.namespace, name);
}

/**
 * The resource of `kind` a Secret belongs to, for the Secret watch: its controller reference, or
 * the owner label of a Secret that has none (restored, to be taken back).
 */
export function secretOwner(kind: { kind: string; apiVersion: string }): (secret: KubeObject) => string[] {
  return (secret) => {
    const ns = secret.metadata.namespace ?? "";
    const ref = (secret.metadata.ownerReferences ?? []).find(
      (r) => r.controller && r.kind === kind.kind && r.apiVersion === kind.apiVersion,
    );
    if (ref) return [`${ns}/${ref.name}`];
    const labelled = secret.metadata.labels?.[ownerLabel(kind.kind)];
    return labelled ? [`${ns}/${labelled}`] : [];
  };
}
