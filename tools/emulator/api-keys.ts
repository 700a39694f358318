// API keys, each of one account: creation (the only time a value is shown),
// authentication by digest, and revocation. An account sees only its own keys.
import { PlatformError, notFound } from "./errors.ts";
import { digestApiKey, newApiKeyValue } from "./ids.ts";
import type { ApiKeyRecord } from "./model.ts";
import type { World } from "./world.ts";

export function createApiKey(
  world: World,
  accountId: string,
  name: string,
  now: number,
): { key: ApiKeyRecord; value: string } {
  const value = newApiKeyValue();
  return { key: world.addApiKey(accountId, name, value, now), value };
}

/** The live key a bearer token names, if any. */
export function authenticate(world: World, token: string): ApiKeyRecord | undefined {
  const key = world.apiKeysByDigest.get(digestApiKey(token));
  return key && !key.revoked ? key : undefined;
}

/** Not a change of the world's version: that would throw away cached views on every request. */
export function recordKeyUse(key: ApiKeyRecord, addr: string, now: number): void {
  key.lastUsedAt = now;
  key.lastUsedFromAddr = addr;
}

export function listApiKeys(world: World, accountId: string): ApiKeyRecord[] {
  return [...world.apiKeysById.values()].filter((k) => !k.revoked && k.accountId === accountId);
}

/** Another account's key is as unknown as one that never existed. */
export function revokeApiKey(world: World, accountId: string, rawId: string): ApiKeyRecord {
  if (!/^\d{1,18}$/.test(rawId)) throw new PlatformError(400, "key_id must be an integer");
  const key = world.apiKeysById.get(Number(rawId));
  if (!key || key.revoked || key.accountId !== accountId) throw notFound("API key");
  key.revoked = true;
  world.changed();
  return key;
}
