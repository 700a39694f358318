// The Secret an ApiKey writes: the only place a key value is ever stored. Entries `apiKey` (the
// default key of SecretKeyRef, so the Secret can be the credentials of other resources) and
// `keyId`; an owned Secret of the layer (managed/owned-secret.ts): labelled, controlled by the
// ApiKey so it goes with it and its changes wake the controller.
import { createHash } from "node:crypto";
import { isControlledBy, type KubeClient } from "../../runtime/index.ts";
import { credentialsSecretLabels, decodeSecretValue, secretKind, type Secret } from "../credentials.ts";
import { Delay, Problem } from "../managed/errors.ts";
import { writeOwnedSecret, type Owner } from "../managed/owned-secret.ts";

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

/**
 * Stores `key` in the Secret with server-side apply (the layer's writer): one request creates it
 * or replaces its two entries, so a reader sees the old key or the new one, never a mix, and a
 * Secret that appeared meanwhile (a stale read) is no create conflict. Refuses a Secret that
 * another owner controls (read directly, never from a cache): overwriting it could lose
 * someone's key.
 */
export async function writeKeySecret(
  client: KubeClient,
  owner: Owner,
  name: string,
  key: { id: number; value: string },
): Promise<void> {
  const existing = await client.get<Secret>(secretKind, owner.metadata.namespace, name);
  if (existing && !isControlledBy(existing, owner)) {
    throw new Problem(
      "SecretConflict",
      `Secret ${owner.metadata.namespace}/${name} exists and is not controlled by this ApiKey; ` +
        "delete it or choose another spec.secretName",
      { retry: { after: Delay.conflict }, stalled: true },
    );
  }
  // Labelled as platform credentials: it can be the spec.credentials of other resources.
  await writeOwnedSecret(
    client,
    owner,
    name,
    { apiKey: key.value, keyId: String(key.id) },
    {},
    credentialsSecretLabels,
  );
}
