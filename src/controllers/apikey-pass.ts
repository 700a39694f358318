// One reconcile of one ApiKey, as the key flows see it: the managed layer's pass (object, spec,
// platform client, status writes) plus the key's names, its schedule, the account's shared key
// list, and revocations that accept a key already gone.
import { createHash, randomInt } from "node:crypto";
import type { ApiKeySpec, ApiKeyStatus } from "../api/apikey.ts";
import { NotFoundError } from "../platform/index.ts";
import { parseDuration, type KubeObject } from "../runtime/index.ts";
import type { KeyListCache } from "../platform/index.ts";
import type { Pass } from "./managed/types.ts";

export interface ApiKeyObject extends KubeObject {
  spec?: unknown;
  status?: ApiKeyStatus;
}

const suffixAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";

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
  let suffix = "";
  for (let i = 0; i < 6; i++) suffix += suffixAlphabet[randomInt(suffixAlphabet.length)];
  return `${keyName}-${token}-${suffix}`;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export class KeyPass {
  readonly pass: Pass<ApiKeySpec, ApiKeyStatus>;
  readonly keys: KeyListCache;

  constructor(pass: Pass<ApiKeySpec, ApiKeyStatus>, keys: KeyListCache) {
    this.pass = pass;
    this.keys = keys;
  }

  get spec(): ApiKeySpec {
    return this.pass.spec;
  }

  get status(): ApiKeyStatus {
    return this.pass.status;
  }

  /** The ApiKey as last written or read, with apiVersion and kind (it owns the key's Secret). */
  get obj(): ApiKeyObject & { apiVersion: string; kind: string } {
    return this.pass.obj as ApiKeyObject & { apiVersion: string; kind: string };
  }

  get name(): string {
    return this.obj.metadata.name ?? "";
  }

  get namespace(): string {
    return this.obj.metadata.namespace ?? "";
  }

  get keyName(): string {
    return this.spec.keyName ?? this.name;
  }

  /** This ApiKey's mark in its keys' names (keyToken). */
  get token(): string {
    return keyToken(this.namespace, this.name);
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

  get secretName(): string {
    return this.spec.secretName ?? `${this.name}-api-key`;
  }

  get gracePeriodMs(): number {
    return this.spec.rotation ? (parseDuration(this.spec.rotation.gracePeriod) ?? 0) : 0;
  }

  get intervalMs(): number | undefined {
    return this.spec.rotation ? parseDuration(this.spec.rotation.interval) : undefined;
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
