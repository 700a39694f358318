// The ApiKey controller: a platform API key kept in a Secret, replaced when
// the Secret is lost, rotated on schedule, revoked (or retained) with the
// resource. The crash-safe issuing of a key is in apikey-issue.ts; the
// Secret's shape in apikey-secret.ts; the shared key list in apikey-keylist.ts.
import { ApiKeySpec } from "../api/apikey.ts";
import { apiKeyKind } from "../api/index.ts";
import { UnauthorizedError, type ApiKey } from "../platform/index.ts";
import {
  Action,
  Controller,
  TerminalError,
  type Context,
  type Reconciler,
  type ResourceKind,
} from "../runtime/index.ts";
import { issueKey } from "./apikey-issue.ts";
import { KeyListCache } from "./apikey-keylist.ts";
import { Pass, type ApiKeyObject } from "./apikey-pass.ts";
import {
  SecretConflictError,
  apiKeyLabel,
  deleteKeySecret,
  releaseKeySecret,
  storedKey,
  type SecretOwner,
} from "./apikey-secret.ts";
import {
  CredentialsNotFoundError,
  secretKind,
  type ResolvedCredentials,
  type Secret,
} from "./credentials.ts";
import { resourceKind, type ControllerFactory, type KindControllerOptions } from "./options.ts";
import { describeFailure } from "./reasons.ts";

export type { ApiKeyObject } from "./apikey-pass.ts";

export const apiKeyResourceKind: ResourceKind = resourceKind(apiKeyKind);

export const apiKeyFinalizer = "neoncloud.dev/apikey";

/** Tuning beyond KindControllerOptions, for tests. */
export interface ApiKeyTuning {
  /** How old the shared key list (usage figures) may get (default 5 min). */
  usageRefreshMs?: number;
  /** How long to wait after the platform refused the credentials (default 5 min: no hot loop). */
  unauthorizedRetryMs?: number;
}

/**
 * The ApiKey controller. `create` lets a Manager own it; by default it is a
 * standalone Controller (tests).
 */
export function apiKeyController(
  options: KindControllerOptions,
  create: ControllerFactory<ApiKeyObject> = (o) => new Controller(o, options.runtime),
  tuning: ApiKeyTuning = {},
): Controller<ApiKeyObject> {
  const reconciler = new ApiKeyReconciler(options, tuning);
  const controller: Controller<ApiKeyObject> = create({
    kind: apiKeyResourceKind,
    reconciler,
    finalizer: apiKeyFinalizer,
    ...(options.namespaces ? { namespaces: options.namespaces } : {}),
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
    // One Secret watch serves both: the Secrets we write (deleted or altered →
    // replace the key at once) and the Secrets ApiKeys take credentials from
    // (appearing → CredentialsNotFound clears without waiting for a retry).
    watches: [{ kind: secretKind, map: (secret: Secret) => apiKeysConcerning(secret) }],
  });
  const apiKeysConcerning = (secret: Secret): string[] => {
    const ns = secret.metadata.namespace ?? "";
    const keys = (secret.metadata.ownerReferences ?? [])
      .filter((r) => r.kind === apiKeyKind.kind && r.apiVersion === apiKeyKind.apiVersion)
      .map((r) => `${ns}/${r.name}`);
    const labelled = secret.metadata.labels?.[apiKeyLabel];
    if (labelled) keys.push(`${ns}/${labelled}`);
    for (const apiKey of controller.informer.list()) {
      const spec = ApiKeySpec.safeParse(apiKey.spec).data;
      const source = options.access.secretFor(apiKey.metadata.namespace ?? "", spec?.credentials);
      if (source?.namespace === ns && source.name === secret.metadata.name) {
        keys.push(`${apiKey.metadata.namespace}/${apiKey.metadata.name}`);
      }
    }
    return keys;
  };
  return controller;
}

class ApiKeyReconciler implements Reconciler<ApiKeyObject> {
  private readonly options: KindControllerOptions;
  private readonly keys: KeyListCache;
  private readonly unauthorizedRetryMs: number;
  private readonly usageRefreshMs: number;

  constructor(options: KindControllerOptions, tuning: ApiKeyTuning) {
    this.options = options;
    this.usageRefreshMs = tuning.usageRefreshMs ?? 300_000;
    this.unauthorizedRetryMs = tuning.unauthorizedRetryMs ?? 300_000;
    this.keys = new KeyListCache({ maxAgeMs: this.usageRefreshMs });
  }

  async reconcile(cached: ApiKeyObject, ctx: Context<ApiKeyObject>): Promise<Action> {
    let credentials: ResolvedCredentials | undefined;
    let pass: Pass | undefined;
    try {
      const begun = await this.begin(cached, ctx);
      if (!begun) return Action.done();
      ({ credentials, pass } = begun);
      await this.converge(pass);
      return this.ready(pass);
    } catch (err) {
      return this.fail(pass?.obj ?? cached, ctx, err, credentials);
    }
  }

  /** The lifecycle of a live ApiKey, in order. Each step leaves a state the next pass can resume from. */
  private async converge(pass: Pass): Promise<void> {
    // A create that a crash or a lost response interrupted comes first: its key may be live in nobody's hands.
    if (pass.status.pendingKeyName) await issueKey(pass);

    // The platform cannot show a key again: a Secret that lost it gets a new key, and the old one is revoked.
    const current = pass.status.keyId;
    if (current !== undefined) {
      const secret = await pass.ctx.client.get<Secret>(secretKind, pass.namespace, pass.secretName);
      const stored = storedKey(secret);
      const intact =
        stored?.keyId === current &&
        stored.fingerprint !== undefined &&
        (pass.status.keyFingerprint === undefined || stored.fingerprint === pass.status.keyFingerprint);
      if (!intact) {
        await pass.revoke(current, "its Secret was deleted or altered");
        pass.ctx.events.warning(
          "SecretReplaced",
          "Replace",
          `Secret ${pass.secretName} was ${secret ? "altered" : "deleted"}; a key's value cannot be read ` +
            `back from the platform, so key id ${current} was revoked and a new key is issued`,
        );
        await pass.save(forgetCurrentKey);
      }
    }

    // A key revoked behind our back (console, another tool) leaves a Secret holding a dead key.
    if (pass.status.keyId !== undefined && !(await this.listed(pass, pass.status.keyId))) {
      pass.ctx.events.warning(
        "KeyRevokedExternally",
        "Replace",
        `key id ${pass.status.keyId} is no longer on the platform; issuing a new key`,
      );
      await pass.save(forgetCurrentKey);
    }

    if (pass.status.keyId === undefined) await issueKey(pass);

    const previous = pass.status.previousKeyId;
    if (previous !== undefined && pass.now() >= new Date(pass.status.previousKeyRevokeAt ?? 0)) {
      await pass.revoke(previous, "the rotation's grace period is over");
      pass.ctx.events.normal("KeyRevoked", "Revoke", `the grace period of key id ${previous} is over`);
      await pass.save({ previousKeyId: undefined, previousKeyRevokeAt: undefined });
    }

    const interval = pass.intervalMs;
    const due = pass.status.nextRotationAt;
    if (interval !== undefined && due !== undefined && pass.now() >= new Date(due)) {
      if (pass.status.previousKeyId !== undefined) {
        // Grace is shorter than the interval, so this is only a late pass catching up.
        await pass.revoke(pass.status.previousKeyId, "the rotation's grace period is over");
        await pass.save({ previousKeyId: undefined, previousKeyRevokeAt: undefined });
      }
      await issueKey(pass);
    }
  }

  /** Status: usage figures, schedule, Ready. Then wake up at the next thing due. */
  private async ready(pass: Pass): Promise<Action> {
    const now = pass.now().getTime();
    const interval = pass.intervalMs;
    let nextRotationAt = pass.status.nextRotationAt;
    if (interval === undefined) nextRotationAt = undefined;
    else if (!nextRotationAt || new Date(nextRotationAt).getTime() > now + interval) {
      nextRotationAt = pass.at(interval); // rotation newly configured, or its interval shortened
    }
    const keyId = pass.status.keyId;
    const usage = keyId === undefined ? undefined : await this.listed(pass, keyId);
    const generation = pass.obj.metadata.generation;
    await pass.save({
      createdAt: usage?.createdAt ?? pass.status.createdAt,
      lastUsedAt: usage?.lastUsedAt,
      lastUsedFromAddr: usage?.lastUsedFromAddr,
      secretName: pass.secretName,
      nextRotationAt,
      observedGeneration: generation,
      conditions: pass.ctx.conditions.setCondition(pass.status.conditions, {
        type: "Ready",
        status: "True",
        reason: "KeyStored",
        message: `key ${pass.status.keyName} (id ${keyId}) is in Secret ${pass.secretName}`,
        observedGeneration: generation,
      }),
    });
    const dueTimes = [pass.status.nextRotationAt, pass.status.previousKeyRevokeAt]
      .filter((t): t is string => t !== undefined)
      .map((t) => new Date(t).getTime() - now);
    return Action.requeueAfter(Math.max(0, Math.min(this.usageRefreshMs, ...dueTimes)));
  }

  /** The key's entry in the account's key list; a miss is confirmed with a fresh list before it counts. */
  private async listed(pass: Pass, keyId: number): Promise<ApiKey | undefined> {
    const find = (keys: ApiKey[]) => keys.find((k) => k.id === keyId);
    return find(await pass.keys.get(pass.client)) ?? find(await pass.keys.fresh(pass.client));
  }

  async cleanup(cached: ApiKeyObject, ctx: Context<ApiKeyObject>): Promise<Action> {
    let credentials: ResolvedCredentials | undefined;
    let pass: Pass | undefined;
    try {
      const begun = await this.begin(cached, ctx);
      if (!begun) return Action.done();
      ({ credentials, pass } = begun);
      const { status } = pass;
      const keys = await pass.keys.fresh(pass.client);
      const secret = await ctx.client.get<Secret>(secretKind, pass.namespace, pass.secretName);
      // Ours only if the platform knows it under a name we gave: a user may have written any id there.
      const inSecret = keys.find(
        (k) =>
          k.id === storedKey(secret)?.keyId && (k.id === status.keyId || k.name === status.pendingKeyName),
      )?.id;
      const ours = new Set<number>();
      for (const id of [status.keyId, status.previousKeyId, inSecret]) if (id !== undefined) ours.add(id);
      for (const k of keys) if (status.pendingKeyName && k.name === status.pendingKeyName) ours.add(k.id);
      const retain = pass.spec.deletionPolicy === "Retain";
      if (retain && inSecret !== undefined) ours.delete(inSecret); // the one key that is kept
      for (const id of ours) {
        await pass.revoke(id, retain ? "not the retained key" : "the ApiKey was deleted");
      }
      if (retain) {
        await releaseKeySecret(ctx.client, pass.obj, pass.secretName);
        ctx.events.normal("KeyRetained", "Delete", `key and Secret ${pass.secretName} are kept (Retain)`);
      } else {
        await deleteKeySecret(ctx.client, pass.obj, pass.secretName);
        ctx.events.normal("KeyRevoked", "Delete", `revoked key id(s) ${[...ours].join(", ") || "none"}`);
      }
      return Action.done();
    } catch (err) {
      return this.fail(pass?.obj ?? cached, ctx, err, credentials);
    }
  }

  /**
   * Reads the ApiKey from the API server rather than the cache: a status write
   * of the pass before may not have reached the cache yet, and deciding on an
   * older pendingKeyName could create a key twice.
   */
  private async begin(
    cached: ApiKeyObject,
    ctx: Context<ApiKeyObject>,
  ): Promise<{ pass: Pass; credentials: ResolvedCredentials } | undefined> {
    const ns = cached.metadata.namespace ?? "";
    const latest = await ctx.client.get<ApiKeyObject>(apiKeyResourceKind, ns, cached.metadata.name ?? "");
    if (!latest) return undefined;
    const obj = { ...latest, apiVersion: apiKeyKind.apiVersion, kind: apiKeyKind.kind } as ApiKeyObject &
      SecretOwner;
    const parsed = ApiKeySpec.safeParse(obj.spec ?? {});
    if (!parsed.success) throw new TerminalError(`invalid spec: ${parsed.error.message}`);
    const spec = parsed.data;
    const source = this.options.access.secretFor(ns, spec.credentials);
    const credentialsSecret = source
      ? await ctx.client.get<Secret>(secretKind, source.namespace, source.name)
      : undefined;
    const credentials = this.options.access.resolve(ns, spec.credentials, () => credentialsSecret);
    const pass = new Pass({
      ctx,
      obj,
      spec,
      client: credentials.client,
      keys: this.keys,
      now: this.options.now ?? (() => new Date()),
    });
    return { pass, credentials };
  }

  /** Ready=False with a reason a user can act on; then retry as the error says, never in a hot loop. */
  private async fail(
    obj: ApiKeyObject,
    ctx: Context<ApiKeyObject>,
    err: unknown,
    credentials: ResolvedCredentials | undefined,
  ): Promise<Action> {
    if (ctx.signal.aborted) throw err;
    const failure =
      err instanceof SecretConflictError
        ? { reason: err.reason, message: err.message }
        : describeFailure(err);
    const generation = obj.metadata.generation;
    try {
      await ctx.status.patch(obj, {
        ...obj.status,
        conditions: ctx.conditions.setCondition(obj.status?.conditions, {
          type: "Ready",
          status: "False",
          reason: failure.reason,
          message: failure.message,
          observedGeneration: generation,
        }),
      });
    } catch (writeErr) {
      ctx.log.warn({ err: String(writeErr) }, "could not record the failure in status");
    }
    if (err instanceof UnauthorizedError) {
      const source = credentials?.source ?? "the credentials Secret";
      if (credentials?.isDefault) {
        ctx.events.warning(
          "OperatorCredentialsRejected",
          "Authenticate",
          `the platform refused the operator's own API key (Secret ${source}); replace that key: ` +
            `ApiKeys using it retry every ${Math.round(this.unauthorizedRetryMs / 1000)} s`,
        );
      } else {
        ctx.events.warning(
          "CredentialsRejected",
          "Authenticate",
          `the platform refused the API key in Secret ${source}; update that Secret`,
        );
      }
      return Action.requeueAfter(this.unauthorizedRetryMs);
    }
    if (err instanceof CredentialsNotFoundError || err instanceof SecretConflictError) {
      ctx.events.warning(failure.reason, "Reconcile", failure.message);
      return Action.requeueAfter(err.retryAfterMs);
    }
    throw err;
  }
}

const forgetCurrentKey = {
  keyId: undefined,
  keyName: undefined,
  keyFingerprint: undefined,
  createdAt: undefined,
  lastUsedAt: undefined,
  lastUsedFromAddr: undefined,
};
