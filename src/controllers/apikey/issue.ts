// Issuing a key, crash-safe. The platform shows a key's value once, in the create answer, so the
// steps are ordered such that a crash or a lost answer anywhere ends, on a later pass, with the
// key in its Secret or revoked:
//
//   status.pendingKeyName = <keyName>-<token>-<suffix>   (recorded before the key exists)
//   create the key with that name
//   write the Secret (value + id): the only place a key value is ever stored
//   status: keyId, keyName, ...; pendingKeyName cleared
//
// A later pass that finds a pendingKeyName tells where the last one stopped: the Secret holds a
// key of that name → it is safe there; the platform lists a key of that name but the Secret does
// not → its value is lost: revoke it, pick a new name, go again; neither → create.
import type { ApiKeySpec, ApiKeyStatus } from "../../api/apikey.ts";
import type { ApiKey, PlatformClient } from "../../platform/index.ts";
import { credentialsSecretLabels, secretKind, type Secret } from "../managed/credentials.ts";
import type { Pass } from "../managed/kind.ts";
import { checkOwnership, writeOwnedSecret } from "../managed/owned-secret.ts";
import type { KeyRoutes } from "./keys.ts";
import { keyFingerprint, keyOf, pendingKeyName, storedKey, type Key } from "./plan.ts";

export type KeyPass = Pass<ApiKeySpec, ApiKeyStatus, PlatformClient>;

/**
 * Makes a new key current and stores it; a current key already there (a rotation) becomes the
 * previous key for the grace period. Returns what the event says of it.
 */
export async function issueKey(pass: KeyPass, keys: KeyRoutes): Promise<string> {
  const k = keyOf(pass);
  for (;;) {
    const pending = pass.status.pendingKeyName;
    if (pending) {
      const listed = await keys.list(true);
      const secret = await pass.kube.get<Secret>(secretKind, k.namespace, k.secretName);
      const stored = storedKey(secret);
      const inSecret = listed.find((key) => key.id === stored?.keyId && key.name === pending);
      // The last pass stopped after writing the Secret: the key is safe there.
      if (inSecret && stored?.fingerprint) return complete(pass, keys, k, inSecret, stored.fingerprint);
      const lost = listed.filter((key) => key.name === pending);
      if (lost.length === 0) {
        // A Secret another owner controls (read directly, never from a cache) gets no key: it
        // could be someone's. One apply writes both entries: the old key or the new, never a mix.
        checkOwnership(secret, k.owner, "spec.secretName", false);
        const created = await keys.create(pending);
        const entries = { apiKey: created.key, keyId: String(created.id) };
        // Labelled as platform credentials: it can be the spec.credentials of other resources.
        await writeOwnedSecret(pass.kube, k.owner, k.secretName, entries, {}, credentialsSecretLabels);
        const createdAt = created.createdAt ?? new Date().toISOString();
        return complete(
          pass,
          keys,
          k,
          { id: created.id, name: pending, createdAt },
          keyFingerprint(created.key),
        );
      }
      // Created, but its value never reached the Secret (a crash, a lost answer).
      for (const key of lost) {
        await revoke(pass, keys, key.id, "its value was lost before it reached the Secret");
        const note = `key ${key.name} (id ${key.id}) was created but its value was lost before it reached Secret ${k.secretName}; revoked it`;
        pass.events.warning("OrphanKeyRevoked", "Revoke", note);
      }
    }
    await pass.save({ pendingKeyName: pendingKeyName(k.keyName, k.token) });
  }
}

/** The key is current and stored: status records it. Returns what the event says of it. */
async function complete(
  pass: KeyPass,
  keys: KeyRoutes,
  k: Key,
  key: KeyRecord,
  fingerprint: string,
): Promise<string> {
  const { keyId: old, previousKeyId: previous } = pass.status;
  const rotated = old !== undefined && old !== key.id;
  // Only one key may be in its grace period; an older one is overdue anyway (grace < interval).
  if (rotated && previous !== undefined && previous !== old) {
    await revoke(pass, keys, previous, "a newer rotation replaced it");
  }
  await pass.save({
    ...recorded(k, key, fingerprint),
    lastUsedAt: undefined,
    lastUsedFromAddr: undefined,
    pendingKeyName: undefined,
    ...(rotated ? { previousKeyId: old, previousKeyRevokeAt: at(pass, k.gracePeriodMs) } : {}),
    nextRotationAt: k.intervalMs === undefined ? undefined : at(pass, k.intervalMs),
  });
  const stored = `key ${key.name} (id ${key.id}) is in Secret ${k.secretName}`;
  return rotated ? `${stored}; key id ${old} keeps working until ${pass.status.previousKeyRevokeAt}` : stored;
}

type KeyRecord = Pick<ApiKey, "id" | "name" | "createdAt">;

/** Status naming `key` as the current key, stored in the ApiKey's Secret. */
export function recorded(k: Key, key: KeyRecord, fingerprint: string): Partial<ApiKeyStatus> {
  const { id: keyId, name: keyName, createdAt } = key;
  return { keyId, keyName, keyFingerprint: fingerprint, createdAt, secretName: k.secretName };
}

/** Revokes a key; one already revoked or gone is fine (the platform answers 404). */
export async function revoke(pass: KeyPass, keys: KeyRoutes, keyId: number, why: string): Promise<void> {
  await keys.revoke(keyId);
  pass.log.info({ keyId, why }, "revoked API key");
}

/** The time `ms` from the pass's now. */
export const at = (pass: KeyPass, ms: number): string => new Date(pass.now().getTime() + ms).toISOString();
