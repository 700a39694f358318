// The ApiKey's four verbs: a platform API key kept in a Secret, replaced when the Secret loses it,
// rotated on schedule, revoked (or retained) with the resource. Keys have no operations; the
// lifecycle is the managed layer's all the same: observe the key and the one step due (plan.ts),
// create a key (issue.ts, crash-safe), update it, revoke it.
import type { ApiKeySpec, ApiKeyStatus } from "../../api/apikey.ts";
import { KeyListCache, NotFoundError, type ApiKey, type PlatformClient } from "../../platform/index.ts";
import { isControlledBy } from "../../runtime/index.ts";
import { secretKind, type Secret } from "../managed/credentials.ts";
import type { Adapter, Answer, Observation, Verdict } from "../managed/kind.ts";
import { outside } from "../managed/refusal.ts";
import { keyRoutes, type KeyRoutes } from "./keys.ts";
import { adoptable, adoptSecret, deleteOwnedSecret, releaseSecret } from "../managed/owned-secret.ts";
import { at, issueKey, recorded, revoke, type KeyPass } from "./issue.ts";
import { dueSteps, keyOf, keyStep, rotationTime, storedKey, type Key, type KeyStep } from "./plan.ts";

type S = ApiKeyStatus;

/** The key as found: its listing, its Secret, and what a lost status left to take back. */
export interface KeyState {
  secretName: string;
  /** The current key in the account's list; undefined: none, or not listed (revoked elsewhere). */
  listed?: ApiKey | undefined;
  /** The key's Secret, read afresh (a cached copy right after our own write would look altered). */
  secret: Secret | undefined;
  /** Status lost: the key this ApiKey's Secret holds, listed under a name this ApiKey gives. */
  recovery?: { key: ApiKey; fingerprint: string; adopt: Secret | undefined; others: ApiKey[] } | undefined;
}

/** A key forgotten: status no longer names a current key. */
const keyFields = ["keyId", "keyName", "keyFingerprint", "createdAt", "lastUsedAt", "lastUsedFromAddr"];
const forgetCurrentKey: Partial<S> = Object.fromEntries(keyFields.map((field) => [field, undefined]));

export class ApiKeys implements Adapter<ApiKeySpec, S, KeyState, KeyStep, PlatformClient> {
  /** The account's key list: what is live, and usage figures at most `usageRefreshMs` old. */
  private readonly keys: KeyListCache;
  private readonly usageRefreshMs: number;

  constructor(usageRefreshMs: number) {
    this.keys = new KeyListCache({ maxAgeMs: usageRefreshMs });
    this.usageRefreshMs = usageRefreshMs;
  }

  /**
   * The key the resource holds: the current one listed, or (status lost) the one its Secret holds
   * under a name it gave. None: no key yet, an interrupted create to finish, or a key revoked
   * elsewhere (the layer then creates one, with a Warning). While the resource is being deleted,
   * whatever it may still hold (current, previous, pending keys, its Secret) is its object.
   */
  async observe(pass: KeyPass): Promise<Observation<KeyState, S, KeyStep>> {
    const state = await this.find(pass);
    const { status } = pass;
    const exists = (next?: KeyStep) => ({
      exists: true as const,
      object: state,
      id: status.keyId === undefined ? "(none)" : String(status.keyId),
      status: this.status(state, pass),
      ready: ready(state),
      next,
      lookAgainMs: this.lookAgainMs(pass),
    });
    if (pass.deleting) {
      const holds = [status.keyId, status.previousKeyId, status.pendingKeyName, state.secret];
      return holds.some((h) => h !== undefined) ? exists() : { exists: false };
    }
    if (state.recovery) return exists(keyStep("recover"));
    if (status.keyId === undefined) return { exists: false };
    const seen = { secret: state.secret, listed: state.listed !== undefined, now: pass.now().getTime() };
    const [due] = dueSteps(status, { ...seen, intervalMs: keyOf(pass).intervalMs });
    if (due === "revoked-externally") return { exists: false };
    return exists(due && keyStep(due));
  }

  /**
   * A first key, the create a crash interrupted, or a new one for a key revoked elsewhere (status
   * forgets it first: a Secret never keeps a dead key).
   */
  async create(pass: KeyPass): Promise<Answer<S>> {
    if (pass.status.keyId !== undefined) await pass.save(forgetCurrentKey);
    return { message: await issueKey(pass, await this.routes(pass)) };
  }

  async update(pass: KeyPass, step: KeyStep, state: KeyState): Promise<Answer<S>> {
    const { change, message } = step;
    const current = pass.status.keyId;
    const answer = (note: string) => ({ message: note });
    const keys = await this.routes(pass);
    if (change === "recover")
      return answer(state.recovery ? await this.recover(pass, keys, state.recovery) : message);
    // Grace is shorter than the interval: a previous key still here at a rotation is a late pass catching up.
    if (change === "revoke-previous" || change === "rotate") await this.revokePrevious(pass, keys);
    if (change === "revoke-previous") return answer(message);
    if (change === "replace" && current !== undefined) {
      // The platform cannot show a key again: a Secret that lost it gets a new key, the old one revoked.
      await revoke(pass, keys, current, "its Secret was deleted or altered");
      const note = `Secret ${keyOf(pass).secretName} was ${state.secret ? "altered" : "deleted"}; a key's value cannot be read back from the platform, so key id ${current} was revoked and a new key is issued`;
      pass.events.warning("SecretReplaced", "Replace", note);
      await pass.save(forgetCurrentKey);
    }
    return answer(await issueKey(pass, keys));
  }

  /**
   * Revokes every key of the resource, and its Secret goes with them; with deletionPolicy Retain,
   * the one its Secret holds stays, and the Secret is released instead of deleted. Revocation takes
   * effect at once: nothing is left to look for.
   */
  async delete(pass: KeyPass): Promise<"gone"> {
    await this.revokeAll(pass, pass.spec.deletionPolicy === "Retain");
    return "gone";
  }

  private status({ listed, secretName }: KeyState, pass: KeyPass): Partial<S> {
    const { nextRotationAt, createdAt } = pass.status;
    return {
      createdAt: listed?.createdAt ?? createdAt,
      lastUsedAt: listed?.lastUsedAt,
      lastUsedFromAddr: listed?.lastUsedFromAddr,
      secretName,
      nextRotationAt: rotationTime(nextRotationAt, pass.now().getTime(), keyOf(pass).intervalMs),
    };
  }

  /** Usage is refreshed now and then; a rotation or the end of a grace period comes on time. */
  private lookAgainMs(pass: KeyPass): number {
    const now = pass.now().getTime();
    const next = rotationTime(pass.status.nextRotationAt, now, keyOf(pass).intervalMs);
    const due = [next, pass.status.previousKeyRevokeAt].filter((t) => t !== undefined);
    return Math.max(0, Math.min(this.usageRefreshMs, ...due.map((t) => Date.parse(t) - now)));
  }

  /**
   * Where the keys live: the account's own, or (spec.projectId) the project's organization's,
   * scoped to it; the organization is read once from the project and recorded.
   */
  private async routes(pass: KeyPass): Promise<KeyRoutes> {
    const projectId = pass.spec.projectId;
    if (projectId === undefined) return keyRoutes(pass.client, this.keys, undefined, pass.signal);
    let orgId = pass.status.orgId;
    if (orgId === undefined) {
      const project = await pass.client
        .projectSnapshot(projectId, { signal: pass.signal, maxAgeMs: this.usageRefreshMs })
        .catch((err: unknown) => {
          if (err instanceof NotFoundError)
            throw outside("ProjectNotFound", `spec.projectId: project ${projectId} not found`);
          throw err;
        });
      orgId = project.orgId;
      if (orgId === undefined) {
        throw outside(
          "ProjectHasNoOrganization",
          `spec.projectId: project ${projectId} belongs to no organization, and keys that reach one project are an organization's; move it into one, or leave spec.projectId out for an account-wide key`,
        );
      }
      await pass.save({ orgId, projectId });
    }
    return keyRoutes(pass.client, this.keys, { orgId, projectId }, pass.signal);
  }

  /** The key's state: its listing, its Secret, and what a lost status left to take back. */
  private async find(pass: KeyPass): Promise<KeyState> {
    const k = keyOf(pass);
    const secret = await pass.kube.get<Secret>(secretKind, k.namespace, k.secretName);
    const state = { secretName: k.secretName, secret };
    const { keyId, pendingKeyName } = pass.status;
    if (keyId !== undefined) return { ...state, listed: await this.listed(pass, keyId) };
    if (pendingKeyName || !secret || pass.deleting) return state;
    // Status lost (a restore from a backup without status, an edit): the Secret says which key is
    // ours. Issuing a new one instead would overwrite it and leave the old key live in nobody's hands.
    const keys = await (await this.routes(pass)).list(true);
    const { key, fingerprint, restored } = held(pass, k, secret, keys);
    if (!key || !fingerprint) return state;
    const others = keys
      .filter((other) => other.id !== key.id && k.gave(other.name))
      .sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || b.id - a.id);
    return { ...state, recovery: { key, fingerprint, adopt: restored ? secret : undefined, others } };
  }

  /**
   * Takes the key back into status. Other live keys under this ApiKey's names were tracked by the
   * lost status too: a rotation's previous key in its grace period, or a key a crash left in
   * nobody's hands. The newest keeps a grace period from now (clients may still use it); any
   * older one is revoked at once.
   */
  private async recover(
    pass: KeyPass,
    keys: KeyRoutes,
    recovery: NonNullable<KeyState["recovery"]>,
  ): Promise<string> {
    const { key, fingerprint, adopt, others } = recovery;
    const k = keyOf(pass);
    if (adopt) {
      await adoptSecret(pass.kube, k.owner, adopt);
      const note = `Secret ${k.secretName} had no owner (a restore from a backup, or retained) and holds key ${key.name}, which this ApiKey named; it is this ApiKey's again`;
      pass.events.normal("SecretAdopted", "Recover", note);
    }
    const [previous, ...older] = others;
    for (const stale of older)
      await revoke(pass, keys, stale.id, "status had lost it, and a newer key replaced it");
    const revokeAt = at(pass, k.gracePeriodMs);
    await pass.save({
      ...recorded(k, key, fingerprint),
      ...(previous ? { previousKeyId: previous.id, previousKeyRevokeAt: revokeAt } : {}),
    });
    const message = `status had lost its key; key ${key.name} (id ${key.id}) in Secret ${k.secretName} is this ApiKey's`;
    return previous
      ? `${message}; key id ${previous.id}, also this ApiKey's, is revoked at ${revokeAt}`
      : message;
  }

  private async revokePrevious(pass: KeyPass, keys: KeyRoutes): Promise<void> {
    const previous = pass.status.previousKeyId;
    if (previous === undefined) return;
    await revoke(pass, keys, previous, "the rotation's grace period is over");
    await pass.save({ previousKeyId: undefined, previousKeyRevokeAt: undefined });
  }

  /**
   * Every key this ApiKey holds, by status and by the names it gives, is revoked; with `retain`
   * the one its Secret holds stays, and the Secret is released instead of deleted.
   */
  private async revokeAll(pass: KeyPass, retain: boolean): Promise<void> {
    const { kube } = pass;
    const { keyId, previousKeyId, pendingKeyName } = pass.status;
    const k = keyOf(pass);
    const routes = await this.routes(pass);
    const keys = await routes.list(true);
    const secret = await kube.get<Secret>(secretKind, k.namespace, k.secretName);
    const { key: inSecret, restored } = held(pass, k, secret, keys);
    const pending = keys.filter((key) => key.name === pendingKeyName).map((key) => key.id);
    const ours = new Set([keyId, previousKeyId, inSecret?.id, ...pending].filter((id) => id !== undefined));
    if (retain && inSecret) ours.delete(inSecret.id); // the one key that is kept
    for (const id of ours)
      await revoke(pass, routes, id, retain ? "not the retained key" : "the ApiKey was deleted");
    if (retain) {
      await releaseSecret(kube, k.owner, k.secretName);
      pass.events.normal("KeyRetained", "Delete", `key and Secret ${k.secretName} are kept (Retain)`);
      return;
    }
    await deleteOwnedSecret(kube, k.owner, k.secretName);
    // A restored Secret no pass took back yet holds the key just revoked: it goes too.
    if (restored && inSecret) await kube.delete(secretKind, k.namespace, k.secretName);
    pass.events.normal("KeyRevoked", "Delete", `revoked key id(s) ${[...ours].join(", ") || "none"}`);
  }

  /** The key's entry in the account's key list; a miss is confirmed with a fresh list before it counts. */
  private async listed(pass: KeyPass, keyId: number): Promise<ApiKey | undefined> {
    const find = (keys: ApiKey[]) => keys.find((key) => key.id === keyId);
    const routes = await this.routes(pass);
    return find(await routes.list(false)) ?? find(await routes.list(true));
  }
}

/**
 * The key this ApiKey's Secret holds, if it is ours: the one status names, or (status lost) one listed
 * under a name this ApiKey gives, as a user may have written any id. A Secret it does not control
 * (`restored`: owner reference stripped by a restore, or retained) only with a key carrying its token.
 */
function held(pass: KeyPass, k: Key, secret: Secret | undefined, keys: ApiKey[]) {
  const { keyId, pendingKeyName } = pass.status;
  const controlled = secret !== undefined && isControlledBy(secret, k.owner);
  const restored = secret !== undefined && !controlled && adoptable(secret, k.owner, true);
  const lost = keyId === undefined && !pendingKeyName;
  const stored = storedKey(secret);
  const key = keys.find(
    ({ id, name }) =>
      id === stored?.keyId &&
      (id === keyId ||
        name === pendingKeyName ||
        (lost && (controlled || restored) && k.gave(name)) ||
        (lost && controlled && k.gaveBeforeTokens(name))),
  );
  return { key, fingerprint: stored?.fingerprint, restored };
}

function ready(state: KeyState): Verdict {
  const which = state.listed ? `${state.listed.name} (id ${state.listed.id})` : "key";
  return ["True", "KeyStored", `key ${which} is in Secret ${state.secretName}`];
}
