// The ApiKey adapter: a platform API key kept in a Secret, replaced when the Secret is lost,
// rotated on schedule, revoked (or retained) with the resource, on the managed-resource layer
// (managed/). The crash-safe issuing of a key is in apikey-issue.ts; the Secret's shape in
// apikey-secret.ts; the shared key list in platform/key-list.ts.
import { ApiKeySpec, type ApiKeyStatus } from "../api/apikey.ts";
import { apiKeyKind } from "../api/index.ts";
import type { ApiKey } from "../platform/index.ts";
import { isControlledBy, type Controller } from "../runtime/index.ts";
import { issueKey } from "./apikey-issue.ts";
import { KeyListCache } from "../platform/index.ts";
import { KeyPass, type ApiKeyObject } from "./apikey-pass.ts";
import {
  adoptKeySecret,
  apiKeyLabel,
  deleteKeySecret,
  isAdoptable,
  releaseKeySecret,
  storedKey,
} from "./apikey-secret.ts";
import { secretKind, type Secret } from "./credentials.ts";
import { managedController } from "./managed/controller.ts";
import type { Change, Deletion, ExternalClient, ManagedKind, Observation, Pass } from "./managed/types.ts";
import { resourceKind, type ControllerFactory, type KindControllerOptions } from "./options.ts";

export type { ApiKeyObject } from "./apikey-pass.ts";

export const apiKeyResourceKind = resourceKind(apiKeyKind);

export const apiKeyFinalizer = "neoncloud.dev/apikey";

/** Tuning beyond KindControllerOptions, for tests. */
export interface ApiKeyTuning {
  /** How old the shared key list (usage figures) may get (default 5 min). */
  usageRefreshMs?: number;
  /** How long to wait after the platform refused the credentials (default 5 min: no hot loop). */
  unauthorizedRetryMs?: number;
}

type S = ApiKeyStatus;
type KPass = Pass<ApiKeySpec, S>;

/** What is due on a key that exists, in the order update handles it. */
export type Due = "resume" | "replace" | "revoked-externally" | "revoke-previous" | "rotate";

const kind: ManagedKind<ApiKeySpec> = {
  resource: { ...apiKeyResourceKind, apiVersion: apiKeyKind.apiVersion },
  finalizer: apiKeyFinalizer,
  spec: ApiKeySpec,
  credentials: (spec) => spec.credentials,
  observeOnly: () => false,
  // Retain keeps the current key and its Secret, but still revokes the others: delete decides.
  orphanOnDelete: () => false,
};

class ApiKeys implements ExternalClient<ApiKeySpec, S, Due[]> {
  private readonly keys: KeyListCache;
  private readonly usageRefreshMs: number;

  constructor(tuning: ApiKeyTuning) {
    this.usageRefreshMs = tuning.usageRefreshMs ?? 300_000;
    this.keys = new KeyListCache({ maxAgeMs: this.usageRefreshMs });
  }

  async observe(pass: KPass): Promise<Observation<S, Due[]>> {
    const k = new KeyPass(pass, this.keys);
    // Status lost (a restore from a backup without status, an edit): the Secret says which key is ours.
    if (k.status.keyId === undefined && !k.status.pendingKeyName) await this.recover(k);
    const status = k.status;
    const keyId = status.keyId;
    if (keyId === undefined) return { state: "absent" };
    // Read afresh, not from the cache: a stale copy right after our own write would look altered.
    const secret = await pass.kube.get<Secret>(secretKind, k.namespace, k.secretName);
    const listed = await this.listed(k, keyId);
    const now = k.now().getTime();
    const due = dueSteps(status, { secret, listed: listed !== undefined, now, intervalMs: k.intervalMs });
    const nextRotationAt = rotationTime(status.nextRotationAt, now, k.intervalMs);
    const dueTimes = [nextRotationAt, status.previousKeyRevokeAt]
      .filter((t): t is string => t !== undefined)
      .map((t) => Date.parse(t) - now);
    return {
      state: "present",
      upToDate: due.length === 0,
      diff: due,
      status: {
        createdAt: listed?.createdAt ?? status.createdAt,
        lastUsedAt: listed?.lastUsedAt,
        lastUsedFromAddr: listed?.lastUsedFromAddr,
        secretName: k.secretName,
        nextRotationAt,
      },
      ready: ["True", "KeyStored", `key ${status.keyName} (id ${keyId}) is in Secret ${k.secretName}`],
      observeAfterMs: Math.max(0, Math.min(this.usageRefreshMs, ...dueTimes)),
    };
  }

  async create(pass: KPass): Promise<Change<S>> {
    const k = new KeyPass(pass, this.keys);
    await issueKey(k);
    return stored(k, "KeyCreated");
  }

  /** The steps due on an existing key, in order; each leaves a state the next pass can resume from. */
  async update(pass: KPass, observed: { diff?: Due[] }): Promise<Change<S>> {
    const k = new KeyPass(pass, this.keys);
    const due = new Set(observed.diff ?? []);
    if (due.has("resume")) await issueKey(k);
    // The platform cannot show a key again: a Secret that lost it gets a new key, and the old one is revoked.
    const current = k.status.keyId;
    if (due.has("replace") && current !== undefined) {
      const secret = await pass.kube.get<Secret>(secretKind, k.namespace, k.secretName);
      if (!intact(secret, k.status)) {
        await k.revoke(current, "its Secret was deleted or altered");
        pass.events.warning(
          "SecretReplaced",
          "Replace",
          `Secret ${k.secretName} was ${secret ? "altered" : "deleted"}; a key's value cannot be read ` +
            `back from the platform, so key id ${current} was revoked and a new key is issued`,
        );
        await k.save(forgetCurrentKey);
      }
    }
    // A key revoked behind our back (console, another tool) leaves a Secret holding a dead key.
    if (
      due.has("revoked-externally") &&
      k.status.keyId !== undefined &&
      !(await this.listed(k, k.status.keyId))
    ) {
      pass.events.warning(
        "KeyRevokedExternally",
        "Replace",
        `key id ${k.status.keyId} is no longer on the platform; issuing a new key`,
      );
      await k.save(forgetCurrentKey);
    }
    if (k.status.keyId === undefined) await issueKey(k);
    const previous = k.status.previousKeyId;
    if (previous !== undefined && k.now() >= new Date(k.status.previousKeyRevokeAt ?? 0)) {
      await k.revoke(previous, "the rotation's grace period is over");
      pass.events.normal("KeyRevoked", "Revoke", `the grace period of key id ${previous} is over`);
      await k.save({ previousKeyId: undefined, previousKeyRevokeAt: undefined });
    }
    const dueAt = k.status.nextRotationAt;
    if (k.intervalMs !== undefined && dueAt !== undefined && k.now() >= new Date(dueAt)) {
      if (k.status.previousKeyId !== undefined) {
        // Grace is shorter than the interval, so this is only a late pass catching up.
        await k.revoke(k.status.previousKeyId, "the rotation's grace period is over");
        await k.save({ previousKeyId: undefined, previousKeyRevokeAt: undefined });
      }
      await issueKey(k);
    }
    return stored(k, "KeyUpdated");
  }

  async delete(pass: KPass): Promise<Deletion> {
    const k = new KeyPass(pass, this.keys);
    const { status } = k;
    const keys = await this.keys.fresh(pass.client);
    const secret = await pass.kube.get<Secret>(secretKind, k.namespace, k.secretName);
    // Ours only if the platform knows it under a name we gave: a user may have written any id there.
    // A status that lost its key (a restore without status) still has the Secret this ApiKey
    // controls: the key it holds is ours when the platform lists it under this ApiKey's names.
    const statusLost = status.keyId === undefined && !status.pendingKeyName;
    const controlled = secret !== undefined && isControlledBy(secret, k.obj);
    // Restored (owner references stripped) and deleted before any pass took the Secret back.
    const adoptable = secret !== undefined && !controlled && isAdoptable(secret, k.obj);
    const inSecret = keys.find(
      (key) =>
        key.id === storedKey(secret)?.keyId &&
        (key.id === status.keyId ||
          key.name === status.pendingKeyName ||
          (statusLost && controlled && (k.gave(key.name) || k.gaveBeforeTokens(key.name))) ||
          (statusLost && adoptable && k.gave(key.name))),
    )?.id;
    const ours = new Set<number>();
    for (const id of [status.keyId, status.previousKeyId, inSecret]) if (id !== undefined) ours.add(id);
    for (const key of keys) if (status.pendingKeyName && key.name === status.pendingKeyName) ours.add(key.id);
    const retain = k.spec.deletionPolicy === "Retain";
    if (retain && inSecret !== undefined) ours.delete(inSecret); // the one key that is kept
    for (const id of ours) await k.revoke(id, retain ? "not the retained key" : "the ApiKey was deleted");
    if (retain) {
      await releaseKeySecret(pass.kube, k.obj, k.secretName);
      pass.events.normal("KeyRetained", "Delete", `key and Secret ${k.secretName} are kept (Retain)`);
    } else {
      await deleteKeySecret(pass.kube, k.obj, k.secretName);
      // A restored Secret no pass took back yet holds the key just revoked: it goes too.
      if (adoptable && inSecret !== undefined) await pass.kube.delete(secretKind, k.namespace, k.secretName);
      pass.events.normal("KeyRevoked", "Delete", `revoked key id(s) ${[...ours].join(", ") || "none"}`);
    }
    return { gone: true };
  }

  /**
   * Takes the key back into status from the Secret this ApiKey controls, when the platform lists
   * it under a name this ApiKey gives (`<keyName>-<token>-<suffix>`): issuing a new one instead would
   * overwrite the Secret and leave the old key live in nobody's hands.
   */
  private async recover(k: KeyPass): Promise<void> {
    const secret = await k.pass.kube.get<Secret>(secretKind, k.namespace, k.secretName);
    if (!secret) return;
    const controlled = isControlledBy(secret, k.obj);
    // Restored with a new UID (owner references stripped), or retained by an ApiKey of this name.
    const adoptable = !controlled && isAdoptable(secret, k.obj);
    if (!controlled && !adoptable) return;
    const inSecret = storedKey(secret);
    if (inSecret?.keyId === undefined || inSecret.fingerprint === undefined) return;
    const keys = await this.keys.fresh(k.pass.client);
    const key = keys.find(
      (listed) =>
        listed.id === inSecret.keyId &&
        // A Secret this ApiKey did not write is taken only with a key carrying its token.
        (k.gave(listed.name) || (controlled && k.gaveBeforeTokens(listed.name))),
    );
    if (!key) return;
    if (adoptable) {
      await adoptKeySecret(k.pass.kube, k.obj, secret);
      k.pass.events.normal(
        "SecretAdopted",
        "Recover",
        `Secret ${k.secretName} had no owner (a restore from a backup, or retained) and holds key ${key.name}, which this ApiKey named; it is this ApiKey's again`,
      );
    }
    // Other live keys under this ApiKey's names were tracked by the lost status too: a rotation's
    // previous key in its grace period, or a key a crash left in nobody's hands. The newest keeps
    // a grace period from now (clients may still use it); any older one is revoked at once. Only
    // names carrying this ApiKey's token count: a namesake in another namespace (same keyName)
    // gives keys of the same form otherwise.
    const [previous, ...older] = keys
      .filter((listed) => listed.id !== key.id && k.gave(listed.name))
      .sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || b.id - a.id);
    for (const stale of older) await k.revoke(stale.id, "status had lost it, and a newer key replaced it");
    await k.save({
      keyId: key.id,
      keyName: key.name,
      keyFingerprint: inSecret.fingerprint,
      createdAt: key.createdAt,
      secretName: k.secretName,
      ...(previous ? { previousKeyId: previous.id, previousKeyRevokeAt: k.at(k.gracePeriodMs) } : {}),
    });
    k.pass.events.normal(
      "KeyRecovered",
      "Recover",
      `status had lost its key; key ${key.name} (id ${key.id}) in Secret ${k.secretName} is this ApiKey's` +
        (previous
          ? `; key id ${previous.id}, also this ApiKey's, is revoked at ${k.at(k.gracePeriodMs)}`
          : ""),
    );
  }

  /** The key's entry in the account's key list; a miss is confirmed with a fresh list before it counts. */
  private async listed(k: KeyPass, keyId: number): Promise<ApiKey | undefined> {
    const find = (keys: ApiKey[]) => keys.find((key) => key.id === keyId);
    return find(await this.keys.get(k.pass.client)) ?? find(await this.keys.fresh(k.pass.client));
  }
}

/**
 * What is due on an existing key, in the order update handles it: a create a crash interrupted
 * (its key may be live in nobody's hands), a Secret that lost the key, a key revoked behind our
 * back, a previous key whose grace period is over, a rotation.
 */
export function dueSteps(
  status: S,
  seen: { secret: Secret | undefined; listed: boolean; now: number; intervalMs: number | undefined },
): Due[] {
  const due: Due[] = [];
  if (status.pendingKeyName) due.push("resume");
  if (!intact(seen.secret, status)) due.push("replace");
  if (!seen.listed) due.push("revoked-externally");
  if (status.previousKeyId !== undefined && seen.now >= Date.parse(status.previousKeyRevokeAt ?? "0")) {
    due.push("revoke-previous");
  }
  if (
    seen.intervalMs !== undefined &&
    status.nextRotationAt !== undefined &&
    seen.now >= Date.parse(status.nextRotationAt)
  ) {
    due.push("rotate");
  }
  return due;
}

/** When the next rotation is due: kept, set when rotation is newly configured or its interval shortened. */
export function rotationTime(
  current: string | undefined,
  now: number,
  intervalMs: number | undefined,
): string | undefined {
  if (intervalMs === undefined) return undefined;
  if (current && Date.parse(current) <= now + intervalMs) return current;
  return new Date(now + intervalMs).toISOString();
}

/** The Secret still holds the current key (by id and fingerprint, never by value). */
function intact(secret: Secret | undefined, status: S): boolean {
  const stored = storedKey(secret);
  return (
    stored !== undefined &&
    stored.keyId === status.keyId &&
    stored.fingerprint !== undefined &&
    (status.keyFingerprint === undefined || stored.fingerprint === status.keyFingerprint)
  );
}

/** The key is stored; the next pass reports it Ready with its usage. */
function stored(k: KeyPass, reason: string): Change<S> {
  return {
    reason,
    message: `key ${k.status.keyName} (id ${k.status.keyId}) is in Secret ${k.secretName}`,
    inProgress: false,
    requeueAfterMs: 0,
  };
}

const forgetCurrentKey = {
  keyId: undefined,
  keyName: undefined,
  keyFingerprint: undefined,
  createdAt: undefined,
  lastUsedAt: undefined,
  lastUsedFromAddr: undefined,
};

/** The ApiKeys a Secret concerns besides those taking credentials from it: the one it holds the key of. */
function keyHolders(secret: Secret): string[] {
  const ns = secret.metadata.namespace ?? "";
  const keys = (secret.metadata.ownerReferences ?? [])
    .filter((r) => r.kind === apiKeyKind.kind && r.apiVersion === apiKeyKind.apiVersion)
    .map((r) => `${ns}/${r.name}`);
  const labelled = secret.metadata.labels?.[apiKeyLabel];
  if (labelled) keys.push(`${ns}/${labelled}`);
  return keys;
}

/**
 * The ApiKey controller. `create` lets a Manager own it; by default it is a standalone
 * Controller (tests).
 */
export function apiKeyController(
  options: KindControllerOptions,
  create?: ControllerFactory<ApiKeyObject>,
  tuning: ApiKeyTuning = {},
): Controller<ApiKeyObject> {
  return managedController<ApiKeySpec, S, Due[]>({
    kind,
    external: new ApiKeys(tuning),
    options: {
      ...options,
      unauthorizedRetryMs: tuning.unauthorizedRetryMs ?? options.unauthorizedRetryMs,
    },
    create: create,
    // One Secret watch serves both: the Secrets we write (deleted or altered → replace the key at
    // once) and the Secrets ApiKeys take credentials from (appearing → CredentialsNotFound clears).
    secretConcerns: keyHolders,
  });
}
