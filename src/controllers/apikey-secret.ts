// The Secret an ApiKey writes: the only place a key value is ever stored.
// Entries `apiKey` (the default key of SecretKeyRef, so the Secret can be the
// credentials of other resources) and `keyId`; labelled; controlled by the
// ApiKey so it goes with it and its changes wake the controller.
import { createHash } from "node:crypto";
import { fieldManager } from "../api/group.ts";
import {
  ContentType,
  controllerReference,
  isControlledBy,
  KubeApiError,
  type KubeClient,
  type KubeObject,
} from "../runtime/index.ts";
import { credentialsSecretLabels, decodeSecretValue, secretKind, type Secret } from "./credentials.ts";

export const managedByLabel = "app.kubernetes.io/managed-by";
export const managedByValue = "neon-cloud-operator";
export const apiKeyLabel = "neoncloud.dev/apikey";

/** The resource a Secret belongs to: enough of an ApiKey to name it as owner. */
export interface SecretOwner extends KubeObject {
  apiVersion: string;
  kind: string;
}

/**
 * A short, one-way digest of a key value, kept in status to tell whether the
 * Secret still holds the current key without keeping the key anywhere else.
 */
export function keyFingerprint(value: string): string {
  return createHash("sha256").update(value).digest("hex").slice(0, 16);
}

/** What the Secret holds, without the value itself: its key id and fingerprint. */
export interface StoredKey {
  keyId: number | undefined;
  fingerprint: string | undefined;
}

export function storedKey(secret: Secret | undefined): StoredKey | undefined {
  if (!secret) return undefined;
  const id = decodeSecretValue(secret, "keyId");
  const value = decodeSecretValue(secret, "apiKey");
  return {
    keyId: id && /^\d+$/.test(id) ? Number(id) : undefined,
    fingerprint: value ? keyFingerprint(value) : undefined,
  };
}

/** A Secret of that name exists and is not this ApiKey's: overwriting it could lose someone's key. */
export class SecretConflictError extends Error {
  readonly reason = "SecretConflict";
  /** Re-checked when the Secret changes (the controller watches Secrets), and now and then. */
  readonly retryAfterMs = 60_000;
  constructor(message: string) {
    super(message);
    this.name = "SecretConflictError";
  }
}

function keySecret(owner: SecretOwner, name: string, key: { id: number; value: string }): Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      namespace: owner.metadata.namespace,
      labels: {
        [managedByLabel]: managedByValue,
        [apiKeyLabel]: owner.metadata.name ?? "",
        ...credentialsSecretLabels,
      },
      ownerReferences: [controllerReference(owner)],
    },
    type: "Opaque",
    data: {
      apiKey: Buffer.from(key.value, "utf8").toString("base64"),
      keyId: Buffer.from(String(key.id), "utf8").toString("base64"),
    },
  };
}

/**
 * Stores `key` in the Secret with server-side apply under the operator's field manager: one
 * request creates it or replaces its two entries, so a reader sees the old key or the new one,
 * never a mix, and a Secret that appeared meanwhile (a stale read) is no create conflict. Refuses
 * a Secret that another owner controls (read directly, never from a cache).
 */
export async function writeKeySecret(
  client: KubeClient,
  owner: SecretOwner,
  name: string,
  key: { id: number; value: string },
): Promise<void> {
  const existing = await client.get<Secret>(secretKind, owner.metadata.namespace, name);
  if (existing && !isControlledBy(existing, owner)) {
    throw new SecretConflictError(
      `Secret ${owner.metadata.namespace}/${name} exists and is not controlled by this ApiKey; ` +
        "delete it or choose another spec.secretName",
    );
  }
  await client.apply<Secret>(secretKind, keySecret(owner, name, key), fieldManager);
}

/**
 * A Secret no controller owns, labelled for the ApiKey of this name: what a restore from a backup
 * leaves (Velero strips owner references; the ApiKey comes back with a new UID), or a Secret an
 * ApiKey of this name retained. Its key is this ApiKey's to take back if the platform lists it
 * under a name this ApiKey gives (the caller checks that).
 */
export function isAdoptable(secret: Secret, owner: KubeObject): boolean {
  return (
    !(secret.metadata.ownerReferences ?? []).some((r) => r.controller) &&
    secret.metadata.labels?.[apiKeyLabel] === owner.metadata.name &&
    secret.metadata.labels?.[managedByLabel] === managedByValue
  );
}

/**
 * Makes `owner` the controller of an adoptable Secret: a JSON patch that first tests the
 * resourceVersion it decided on, so a Secret changed meanwhile is not taken (409/422: look again).
 */
export async function adoptKeySecret(client: KubeClient, owner: SecretOwner, secret: Secret): Promise<void> {
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
 * `Retain`: the Secret outlives the ApiKey, so drop its owner reference. A JSON patch that
 * first tests the entry it removes (an update of the whole Secret would need the `update` verb
 * and could write back a stale copy of its data).
 */
export async function releaseKeySecret(client: KubeClient, owner: KubeObject, name: string): Promise<void> {
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

/**
 * `Revoke`: the Secret's key is dead, so the Secret goes now rather than
 * whenever the garbage collector gets to it (a Secret holding a dead key
 * would break its readers in a confusing way).
 */
export async function deleteKeySecret(client: KubeClient, owner: KubeObject, name: string): Promise<void> {
  const secret = await client.get<Secret>(secretKind, owner.metadata.namespace, name);
  if (secret && isControlledBy(secret, owner))
    await client.delete(secretKind, owner.metadata.namespace, name);
}
