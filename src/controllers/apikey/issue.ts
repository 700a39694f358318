// Issuing a key, crash-safe. The platform shows a key's value once, in the
// create response, so every step is ordered such that a crash or a lost
// response anywhere ends, on a later pass, with the key in its Secret or revoked:
//
//   status.pendingKeyName = <keyName>-<suffix>   (recorded before the key exists)
//   create the key with that name
//   write the Secret (value + id)
//   status: keyId, keyName, ...; pendingKeyName cleared
//
// A later pass that finds a pendingKeyName tells where the last one stopped:
// the Secret holds a key of that name → adopt it; the platform has a key of
// that name but the Secret does not → its value is lost: revoke it, pick a new
// name, go again; neither → create.
import type { ApiKey } from "../../platform/index.ts";
import { type KeyPass, pendingKeyName } from "./pass.ts";
import { keyFingerprint, storedKey, writeKeySecret } from "./secret.ts";
import { secretKind, type Secret } from "../credentials.ts";

/**
 * Makes a new key current and stores it. With a current key already
 * (rotation), it becomes the previous key for the grace period. Returns what
 * the event says of it.
 */
export async function issueKey(pass: KeyPass): Promise<string> {
  for (;;) {
    const pending = pass.status.pendingKeyName;
    if (!pending) {
      await pass.save({ pendingKeyName: pendingKeyName(pass.keyName, pass.token) });
      continue;
    }
    const keys = await pass.keys.fresh(pass.pass.client);
    const secret = await pass.pass.kube.get<Secret>(secretKind, pass.namespace, pass.secretName);
    const stored = storedKey(secret);
    const inSecret = keys.find((k) => k.id === stored?.keyId && k.name === pending);
    if (inSecret && stored?.fingerprint) {
      // The last pass stopped after writing the Secret: the key is safe there.
      return complete(pass, inSecret, stored.fingerprint);
    }
    const lost = keys.filter((k) => k.name === pending);
    if (lost.length > 0) {
      // Created, but its value never reached the Secret (crash or lost response).
      for (const key of lost) {
        await pass.revoke(key.id, "its value was lost before it reached the Secret");
        pass.pass.events.warning(
          "OrphanKeyRevoked",
          "Revoke",
          `key ${key.name} (id ${key.id}) was created but its value was lost before it reached Secret ${pass.secretName}; revoked it`,
        );
      }
      await pass.save({ pendingKeyName: pendingKeyName(pass.keyName, pass.token) });
      continue;
    }
    const created = await pass.pass.client.createApiKey(pending, { signal: pass.pass.signal });
    await writeKeySecret(pass.pass.kube, pass.obj, pass.secretName, { id: created.id, value: created.key });
    return complete(
      pass,
      { id: created.id, name: pending, createdAt: created.createdAt ?? new Date().toISOString() },
      keyFingerprint(created.key),
    );
  }
}

/** The key is current and stored: what the event says of it. */
async function complete(
  pass: KeyPass,
  key: Pick<ApiKey, "id" | "name" | "createdAt">,
  fingerprint: string,
): Promise<string> {
  const old = pass.status.keyId;
  const rotated = old !== undefined && old !== key.id;
  const previous = pass.status.previousKeyId;
  if (rotated && previous !== undefined && previous !== old) {
    // Only one key may be in its grace period; an older one is overdue anyway (grace < interval).
    await pass.revoke(previous, "a newer rotation replaced it");
  }
  const interval = pass.intervalMs;
  await pass.save({
    keyId: key.id,
    keyName: key.name,
    keyFingerprint: fingerprint,
    createdAt: key.createdAt,
    lastUsedAt: undefined,
    lastUsedFromAddr: undefined,
    secretName: pass.secretName,
    pendingKeyName: undefined,
    previousKeyId: rotated ? old : pass.status.previousKeyId,
    previousKeyRevokeAt: rotated ? pass.at(pass.gracePeriodMs) : pass.status.previousKeyRevokeAt,
    nextRotationAt: interval === undefined ? undefined : pass.at(interval),
  });
  return rotated
    ? `key ${key.name} (id ${key.id}) is in Secret ${pass.secretName}; key id ${old} keeps working until ${pass.status.previousKeyRevokeAt}`
    : `key ${key.name} (id ${key.id}) is in Secret ${pass.secretName}`;
}
