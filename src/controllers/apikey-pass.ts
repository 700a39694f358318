// One reconcile of one ApiKey: the latest object, its parsed spec, the
// platform client it acts with, and the small actions every step uses
// (status writes chained on the latest object, revocations that accept a key
// already gone).
import { randomInt } from "node:crypto";
import type { ApiKeySpec, ApiKeyStatus } from "../api/apikey.ts";
import { NotFoundError, type PlatformClient } from "../platform/index.ts";
import { parseDuration, type Context, type KubeObject } from "../runtime/index.ts";
import type { KeyListCache } from "./apikey-keylist.ts";
import type { SecretOwner } from "./apikey-secret.ts";

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

export interface PassOptions {
  ctx: Context<ApiKeyObject>;
  obj: ApiKeyObject & SecretOwner;
  spec: ApiKeySpec;
  client: PlatformClient;
  keys: KeyListCache;
  now: () => Date;
}

export class Pass {
  readonly ctx: Context<ApiKeyObject>;
  readonly spec: ApiKeySpec;
  readonly client: PlatformClient;
  readonly keys: KeyListCache;
  readonly now: () => Date;
  /** The ApiKey as last written or read: every status write is based on it. */
  obj: ApiKeyObject & SecretOwner;

  constructor(options: PassOptions) {
    this.ctx = options.ctx;
    this.obj = options.obj;
    this.spec = options.spec;
    this.client = options.client;
    this.keys = options.keys;
    this.now = options.now;
  }

  get status(): ApiKeyStatus {
    return this.obj.status ?? {};
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

  /** Writes status: the current one with `changes` applied (an undefined value removes the field). */
  async save(changes: Partial<ApiKeyStatus>): Promise<void> {
    const next: Record<string, unknown> = { ...this.status, ...changes };
    const written = await this.ctx.status.patch(this.obj, next);
    this.obj = { ...written, apiVersion: this.obj.apiVersion, kind: this.obj.kind };
  }

  /** Revokes a key; one already revoked or gone is fine (the platform answers 404). */
  async revoke(keyId: number, why: string): Promise<void> {
    try {
      await this.client.revokeApiKey(keyId);
      this.ctx.log.info({ keyId, why }, "revoked API key");
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
  }

  at(ms: number): string {
    return new Date(this.now().getTime() + ms).toISOString();
  }
}
