// The ApiKey adapter: a platform API key kept in a Secret, replaced when the Secret loses it,
// rotated on schedule, revoked (or retained) with the resource. Keys have no operations; the
// lifecycle is the managed layer's all the same: find the key's state, plan the one step due
// (plan.ts), make it. The crash-safe issuing of a key is in issue.ts; the Secret in secret.ts.
import type { ApiKeySpec, ApiKeyStatus } from "../../api/apikey.ts";
import type { ApiKey } from "../../platform/index.ts";
import { isControlledBy } from "../../runtime/index.ts";
import type { KeyListCache } from "../apikey-keylist.ts";
import { secretKind, type Secret } from "../credentials.ts";
import type { Adapter, Answer, Pass, Verdict } from "../managed/types.ts";
import { issueKey } from "./issue.ts";
import { KeyPass } from "./pass.ts";
import { dueSteps, keyStep, rotationTime, type KeyStep } from "./plan.ts";
import { storedKey } from "./secret.ts";
import { adoptable, adoptSecret, deleteOwnedSecret, releaseSecret } from "../managed/owned-secret.ts";

type S = ApiKeyStatus;
type KPass = Pass<ApiKeySpec, S>;

/** The key as found: its listing, its Secret, and what a lost status left to take back. */
export interface KeyState {
  secretName: string;
  /** The current key in the account's list; undefined: none, or not listed (revoked elsewhere). */
  listed: ApiKey | undefined;
  /** The key's Secret, read afresh (a cached copy right after our own write would look altered). */
  secret: Secret | undefined;
  /** Status lost: the key this ApiKey's Secret holds, listed under a name this ApiKey gives. */
  recovery?: Recovery | undefined;
}

interface Recovery {
  key: ApiKey;
  fingerprint: string;
  /** The Secret has no controller (a restore, or retained): it becomes this ApiKey's. */
  adopt: boolean;
  /** Other live keys under this ApiKey's names, newest first. */
  others: ApiKey[];
}

export class ApiKeys implements Adapter<ApiKeySpec, S, KeyState, KeyStep> {
  private readonly keys: KeyListCache;
  private readonly usageRefreshMs: number;

  constructor(keys: KeyListCache, usageRefreshMs: number) {
    this.keys = keys;
    this.usageRefreshMs = usageRefreshMs;
  }

  async find(pass: KPass): Promise<KeyState> {
    const k = new KeyPass(pass, this.keys);
    const secret = await pass.kube.get<Secret>(secretKind, k.namespace, k.secretName);
    const { keyId, pendingKeyName } = pass.status;
    if (keyId !== undefined) return { secretName: k.secretName, listed: await this.listed(k, keyId), secret };
    // Status lost (a restore from a backup without status, an edit): the Secret says which key is ours.
    const recovery = pendingKeyName ? undefined : await this.recovery(k, secret);
    return { secretName: k.secretName, listed: undefined, secret, recovery };
  }

  id(state: KeyState): string {
    return state.listed ? `${state.listed.name} (id ${state.listed.id})` : "key";
  }

  plan(pass: KPass, state: KeyState): KeyStep | undefined {
    if (pass.deleting) return undefined;
    if (state.recovery) return keyStep("recover");
    const { status } = pass;
    if (status.keyId === undefined) return keyStep(status.pendingKeyName ? "resume" : "issue");
    const k = new KeyPass(pass, this.keys);
    const listed = state.listed !== undefined;
    const [due] = dueSteps(status, {
      secret: state.secret,
      listed,
      now: k.now().getTime(),
      intervalMs: k.intervalMs,
    });
    return due && keyStep(due);
  }

  /** A first key (the layer creates only what it did not find; a key's state is always found). */
  create(pass: KPass): Promise<Answer<KeyState, S>> {
    return this.apply(pass, keyStep("issue"));
  }

  async apply(pass: KPass, step: KeyStep, state?: KeyState): Promise<Answer<KeyState, S>> {
    const k = new KeyPass(pass, this.keys);
    const current = k.status.keyId;
    switch (step.change) {
      case "recover":
        return {
          operations: [],
          message: state?.recovery ? await this.recover(k, state.recovery) : step.message,
        };
      case "replace":
        // The platform cannot show a key again: a Secret that lost it gets a new key, and the old one is revoked.
        if (current !== undefined) {
          await k.revoke(current, "its Secret was deleted or altered");
          pass.events.warning(
            "SecretReplaced",
            "Replace",
            `Secret ${k.secretName} was ${state?.secret ? "altered" : "deleted"}; a key's value cannot be read ` +
              `back from the platform, so key id ${current} was revoked and a new key is issued`,
          );
          await k.save(forgetCurrentKey);
        }
        break;
      case "revoked-externally":
        // A key revoked behind our back (console, another tool) leaves a Secret holding a dead key.
        pass.events.warning(
          "KeyRevokedExternally",
          "Replace",
          `key id ${current ?? ""} is no longer on the platform; issuing a new key`,
        );
        await k.save(forgetCurrentKey);
        break;
      case "revoke-previous":
        await this.revokePrevious(k, "the rotation's grace period is over");
        return { operations: [], message: step.message };
      case "rotate":
        // Grace is shorter than the interval, so a previous key still here is a late pass catching up.
        await this.revokePrevious(k, "the rotation's grace period is over");
        break;
      case "issue":
      case "resume":
        break;
    }
    return { operations: [], message: await issueKey(k) };
  }

  /** Revokes every key of the resource; the Secret goes with them. */
  async delete(pass: KPass): Promise<"gone"> {
    await this.revokeAll(new KeyPass(pass, this.keys), false);
    return "gone";
  }

  /** Retain: the current key and its Secret stay; the others are revoked all the same. */
  async orphan(pass: KPass): Promise<void> {
    await this.revokeAll(new KeyPass(pass, this.keys), true);
  }

  status(state: KeyState, pass: KPass): Partial<S> {
    const { status } = pass;
    const k = new KeyPass(pass, this.keys);
    return {
      createdAt: state.listed?.createdAt ?? status.createdAt,
      lastUsedAt: state.listed?.lastUsedAt,
      lastUsedFromAddr: state.listed?.lastUsedFromAddr,
      secretName: state.secretName,
      nextRotationAt: rotationTime(status.nextRotationAt, k.now().getTime(), k.intervalMs),
    };
  }

  ready(state: KeyState): Verdict {
    return ["True", "KeyStored", `key ${this.id(state)} is in Secret ${state.secretName}`];
  }

  /** Usage is refreshed now and then; a rotation or the end of a grace period comes on time. */
  observeAfterMs(pass: KPass): number {
    const k = new KeyPass(pass, this.keys);
    const now = k.now().getTime();
    const next = rotationTime(pass.status.nextRotationAt, now, k.intervalMs);
    const due = [next, pass.status.previousKeyRevokeAt]
      .filter((t): t is string => t !== undefined)
      .map((t) => Date.parse(t) - now);
    return Math.max(0, Math.min(this.usageRefreshMs, ...due));
  }

  /**
   * The key this ApiKey's Secret holds, when the platform lists it under a name this ApiKey gives
   * (`<keyName>-<token>-<suffix>`): issuing a new one instead would overwrite the Secret and leave
   * the old key live in nobody's hands.
   */
  private async recovery(k: KeyPass, secret: Secret | undefined): Promise<Recovery | undefined> {
    if (!secret) return undefined;
    const controlled = isControlledBy(secret, k.obj);
    // Restored with a new UID (owner references stripped), or retained by an ApiKey of this name.
    const adopt = !controlled && adoptable(secret, k.obj, true);
    if (!controlled && !adopt) return undefined;
    const inSecret = storedKey(secret);
    if (inSecret?.keyId === undefined || inSecret.fingerprint === undefined) return undefined;
    const keys = await this.keys.fresh(k.pass.client);
    const key = keys.find(
      (listed) =>
        listed.id === inSecret.keyId &&
        // A Secret this ApiKey did not write is taken only with a key carrying its token.
        (k.gave(listed.name) || (controlled && k.gaveBeforeTokens(listed.name))),
    );
    if (!key) return undefined;
    const others = keys
      .filter((listed) => listed.id !== key.id && k.gave(listed.name))
      .sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || b.id - a.id);
    return { key, fingerprint: inSecret.fingerprint, adopt, others };
  }

  /**
   * Takes the key back into status. Other live keys under this ApiKey's names were tracked by the
   * lost status too: a rotation's previous key in its grace period, or a key a crash left in
   * nobody's hands. The newest keeps a grace period from now (clients may still use it); any
   * older one is revoked at once.
   */
  private async recover(k: KeyPass, { key, fingerprint, adopt, others }: Recovery): Promise<string> {
    const secret = await k.pass.kube.get<Secret>(secretKind, k.namespace, k.secretName);
    if (adopt && secret) {
      await adoptSecret(k.pass.kube, k.obj, secret);
      k.pass.events.normal(
        "SecretAdopted",
        "Recover",
        `Secret ${k.secretName} had no owner (a restore from a backup, or retained) and holds key ${key.name}, which this ApiKey named; it is this ApiKey's again`,
      );
    }
    const [previous, ...older] = others;
    for (const stale of older) await k.revoke(stale.id, "status had lost it, and a newer key replaced it");
    await k.save({
      keyId: key.id,
      keyName: key.name,
      keyFingerprint: fingerprint,
      createdAt: key.createdAt,
      secretName: k.secretName,
      ...(previous ? { previousKeyId: previous.id, previousKeyRevokeAt: k.at(k.gracePeriodMs) } : {}),
    });
    return (
      `status had lost its key; key ${key.name} (id ${key.id}) in Secret ${k.secretName} is this ApiKey's` +
      (previous ? `; key id ${previous.id}, also this ApiKey's, is revoked at ${k.at(k.gracePeriodMs)}` : "")
    );
  }

  private async revokePrevious(k: KeyPass, why: string): Promise<void> {
    const previous = k.status.previousKeyId;
    if (previous === undefined) return;
    await k.revoke(previous, why);
    await k.save({ previousKeyId: undefined, previousKeyRevokeAt: undefined });
  }

  /**
   * Every key this ApiKey holds, by status and by the names it gives, is revoked; with `retain`
   * the one its Secret holds stays, and the Secret is released instead of deleted. A key is ours
   * only if the platform lists it under a name we gave: a user may have written any id in status.
   */
  private async revokeAll(k: KeyPass, retain: boolean): Promise<void> {
    const { status, pass } = k;
    const keys = await this.keys.fresh(pass.client);
    const secret = await pass.kube.get<Secret>(secretKind, k.namespace, k.secretName);
    // A status that lost its key (a restore without status) still has the Secret this ApiKey
    // controls: the key it holds is ours when the platform lists it under this ApiKey's names.
    const statusLost = status.keyId === undefined && !status.pendingKeyName;
    const controlled = secret !== undefined && isControlledBy(secret, k.obj);
    // Restored (owner references stripped) and deleted before any pass took the Secret back.
    const restored = secret !== undefined && !controlled && adoptable(secret, k.obj, true);
    const inSecret = keys.find(
      (key) =>
        key.id === storedKey(secret)?.keyId &&
        (key.id === status.keyId ||
          key.name === status.pendingKeyName ||
          (statusLost && controlled && (k.gave(key.name) || k.gaveBeforeTokens(key.name))) ||
          (statusLost && restored && k.gave(key.name))),
    )?.id;
    const ours = new Set<number>();
    for (const id of [status.keyId, status.previousKeyId, inSecret]) if (id !== undefined) ours.add(id);
    for (const key of keys) if (status.pendingKeyName && key.name === status.pendingKeyName) ours.add(key.id);
    if (retain && inSecret !== undefined) ours.delete(inSecret); // the one key that is kept
    for (const id of ours) await k.revoke(id, retain ? "not the retained key" : "the ApiKey was deleted");
    if (retain) {
      await releaseSecret(pass.kube, k.obj, k.secretName);
      pass.events.normal("KeyRetained", "Delete", `key and Secret ${k.secretName} are kept (Retain)`);
      return;
    }
    await deleteOwnedSecret(pass.kube, k.obj, k.secretName);
    // A restored Secret no pass took back yet holds the key just revoked: it goes too.
    if (restored && inSecret !== undefined) await pass.kube.delete(secretKind, k.namespace, k.secretName);
    pass.events.normal("KeyRevoked", "Delete", `revoked key id(s) ${[...ours].join(", ") || "none"}`);
  }

  /** The key's entry in the account's key list; a miss is confirmed with a fresh list before it counts. */
  private async listed(k: KeyPass, keyId: number): Promise<ApiKey | undefined> {
    const find = (keys: ApiKey[]) => keys.find((key) => key.id === keyId);
    return find(await this.keys.get(k.pass.client)) ?? find(await this.keys.fresh(k.pass.client));
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
