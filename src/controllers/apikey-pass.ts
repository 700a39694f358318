// One reconcile of one ApiKey, as the key flows see it: the managed layer's pass (object, spec,
// platform client, status writes) plus the key's names, its schedule, the account's shared key
// list, and revocations that accept a key already gone.
import { randomInt } from "node:crypto";
import type { ApiKeySpec, ApiKeyStatus } from "../api/apikey.ts";
import { NotFoundError } from "../platform/index.ts";
import { parseDuration, type KubeObject } from "../runtime/index.ts";
import type { KeyListCache } from "./apikey-keylist.ts";
import type { Pass } from "./managed/types.ts";

export interface ApiKeyObject extends KubeObject {
  spec?: unknown;
  status?: ApiKeyStatus;
}

const suffixAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";

/** `<keyName>-<6 random [a-z0-9]>`: unique per attempt, so a key whose create answer was lost can be found. */
export function pendingKeyName(keyName: string): string {
  let suffix = "";
  for (let i = 0; i < 6; i++) suffix += suffixAlphabet[randomInt(suffixAlphabet.length)];
  return `${keyName}-${suffix}`;
}

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
