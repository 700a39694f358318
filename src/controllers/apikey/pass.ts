// One reconcile of one ApiKey, as the key flows see it: the layer's pass plus the key's names,
// its schedule, the account's shared key list, and revocations that accept a key already gone.
import { createHash, randomInt } from "node:crypto";
import type { ApiKeySpec, ApiKeyStatus } from "../../api/apikey.ts";
import { NotFoundError } from "../../platform/index.ts";
import { parseDuration, type KubeObject } from "../../runtime/index.ts";
import type { KeyListCache } from "../apikey-keylist.ts";
import type { Owner } from "../managed/owned-secret.ts";
import type { Pass } from "../managed/types.ts";

export interface ApiKeyObject extends KubeObject {
  spec?: unknown;
  status?: ApiKeyStatus;
}

/**
 * Six hex digits of SHA-256 of `<namespace>/<name>`: one ApiKey's mark in its keys' names. The
 * default keyName is the resource's name, which another namespace may share; with the mark, a
 * recovery after a status wipe matches exactly this ApiKey's keys, never a namesake's. Derived
 * from the name, not the UID, so a restore that recreates the ApiKey still knows its keys.
 */
export function keyToken(namespace: string, name: string): string {
  return createHash("sha256").update(`${namespace}/${name}`).digest("hex").slice(0, 6);
}

/**
 * `<keyName>-<token>-<6 random [a-z0-9]>`: unique per attempt, so a key whose create answer was
 * lost can be found; the token says whose it is. At most 48 + 14 = 62 characters (the platform
 * takes 64).
 */
export function pendingKeyName(keyName: string, token: string): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  let suffix = "";
  for (let i = 0; i < 6; i++) suffix += alphabet[randomInt(alphabet.length)];
  return `${keyName}-${token}-${suffix}`;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export class KeyPass {
  readonly pass: Pass<ApiKeySpec, ApiKeyStatus>;
  readonly keys: KeyListCache;
  /** The ApiKey as last written or read, with apiVersion and kind (it owns the key's Secret). */
  readonly obj: Owner;
  readonly namespace: string;
  readonly keyName: string;
  /** This ApiKey's mark in its keys' names (keyToken). */
  readonly token: string;
  readonly secretName: string;
  readonly intervalMs: number | undefined;
  readonly gracePeriodMs: number;

  constructor(pass: Pass<ApiKeySpec, ApiKeyStatus>, keys: KeyListCache) {
    const { spec } = pass;
    const name = pass.obj.metadata.name ?? "";
    this.pass = pass;
    this.keys = keys;
    this.obj = pass.obj as Owner;
    this.namespace = pass.obj.metadata.namespace ?? "";
    this.keyName = spec.keyName ?? name;
    this.token = keyToken(this.namespace, name);
    this.secretName = spec.secretName ?? `${name}-api-key`;
    this.intervalMs = spec.rotation ? parseDuration(spec.rotation.interval) : undefined;
    this.gracePeriodMs = spec.rotation ? (parseDuration(spec.rotation.gracePeriod) ?? 0) : 0;
  }

  get status(): ApiKeyStatus {
    return this.pass.status;
  }

  /** Whether this ApiKey gave `keyName` to a key (pendingKeyName): exactly its own, a namesake's never. */
  gave(keyName: string): boolean {
    return new RegExp(`^${escaped(this.keyName)}-${this.token}-[a-z0-9]{6}$`).test(keyName);
  }

  /**
   * Whether `keyName` has the form of this version's predecessor (`<keyName>-<6 random>`, no
   * token), which a namesake in another namespace may have given too. Trusted only for the key
   * whose id this ApiKey's own Secret holds.
   */
  gaveBeforeTokens(keyName: string): boolean {
    return new RegExp(`^${escaped(this.keyName)}-[a-z0-9]{6}$`).test(keyName);
  }

  now(): Date {
    return this.pass.now();
  }

  /** Writes status now: the current one with `changes` applied (an undefined value removes the field). */
  save(changes: Partial<ApiKeyStatus>): Promise<void> {
    return this.pass.save(changes);
  }

  /** Revokes a key; one already revoked or gone is fine (the platform answers 404). */
  async revoke(keyId: number, why: string): Promise<void> {
    try {
      await this.pass.client.revokeApiKey(keyId, { signal: this.pass.signal });
      this.pass.log.info({ keyId, why }, "revoked API key");
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
  }

  at(ms: number): string {
    return new Date(this.now().getTime() + ms).toISOString();
  }
}
