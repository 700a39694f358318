// The account's API keys: creation (the only time a value is shown),
// authentication by digest, and revocation.
import { PlatformError, notFound } from "./errors.ts";
import { digestApiKey, newApiKeyValue } from "./ids.ts";
import type { ApiKeyRecord } from "./model.ts";
import type { World } from "./world.ts";

export function createApiKey(world: World, name: string, now: number): { key: ApiKeyRecord; value: string } {
  const value = newApiKeyValue();
  return { key: world.addApiKey(name, value, now), value };
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

export function listApiKeys(world: World): ApiKeyRecord[] {
  return [...world.apiKeysById.values()].filter((k) => !k.revoked);
}

export function revokeApiKey(world: World, rawId: string): ApiKeyRecord {
  if (!/^\d{1,18}$/.test(rawId)) throw new PlatformError(400, "key_id must be an integer");
  const key = world.apiKeysById.get(Number(rawId));
  if (!key || key.revoked) throw notFound("API key");
  key.revoked = true;
  world.changed();
  return key;
}
