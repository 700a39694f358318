// What is due on an ApiKey's key, one step per pass, in this order: a key its Secret holds while
// status lost it, a create a crash interrupted (its key may be live in nobody's hands), no key yet,
// a Secret that lost the key, a key revoked behind our back, a previous key whose grace period is
// over, a rotation. Pure, with the names and Secret contents it is decided from (plan.test.ts).
import { createHash, randomInt } from "node:crypto";
import type { ApiKeySpec, ApiKeyStatus } from "../../api/apikey.ts";
import { parseDuration, type KubeObject } from "../../runtime/index.ts";
import { decodeSecretValue, type Secret } from "../managed/credentials.ts";
import type { Step } from "../managed/kind.ts";
import type { Owner } from "../managed/owned-secret.ts";

/** What is due on a key that exists, in the order it is handled. */
export type Due = "resume" | "replace" | "revoked-externally" | "revoke-previous" | "rotate";

/** A step on a key that exists (a key revoked elsewhere no longer does: the layer creates one). */
export type KeyStep = Step & { change: Exclude<Due, "revoked-externally"> | "recover" | "issue" };

export function dueSteps(
  status: ApiKeyStatus,
  seen: { secret: Secret | undefined; listed: boolean; now: number; intervalMs: number | undefined },
): Due[] {
  const { pendingKeyName, previousKeyId, previousKeyRevokeAt, nextRotationAt } = status;
  const due: [Due, boolean][] = [
    ["resume", Boolean(pendingKeyName)],
    ["replace", !intact(seen.secret, status)],
    ["revoked-externally", !seen.listed],
    ["revoke-previous", previousKeyId !== undefined && seen.now >= Date.parse(previousKeyRevokeAt ?? "0")],
    // Date.parse("") is NaN: no rotation is scheduled.
    ["rotate", seen.intervalMs !== undefined && seen.now >= Date.parse(nextRotationAt ?? "")],
  ];
  return due.filter(([, now]) => now).map(([step]) => step);
}

/** When the next rotation is due: kept, set when rotation is newly configured or its interval shortened. */
export function rotationTime(current: string | undefined, now: number, intervalMs?: number) {
  if (intervalMs === undefined) return undefined;
  if (current && Date.parse(current) <= now + intervalMs) return current;
  return new Date(now + intervalMs).toISOString();
}

/** The Secret still holds the current key (by id and fingerprint, never by value). */
function intact(secret: Secret | undefined, status: ApiKeyStatus): boolean {
  const { keyId, fingerprint } = storedKey(secret) ?? {};
  const expected = status.keyFingerprint ?? fingerprint;
  return fingerprint !== undefined && keyId === status.keyId && fingerprint === expected;
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/** A one-way digest of a key value: status tells by it whether the Secret still holds the key. */
export const keyFingerprint = (value: string): string => sha256(value).slice(0, 16);

/** What the Secret (entries `apiKey`, `keyId`) holds, without the value itself. */
export function storedKey(secret: Secret | undefined): { keyId?: number; fingerprint?: string } | undefined {
  if (!secret) return undefined;
  const id = decodeSecretValue(secret, "keyId");
  const value = decodeSecretValue(secret, "apiKey");
  return {
    keyId: id && /^\d+$/.test(id) ? Number(id) : undefined,
    fingerprint: value ? keyFingerprint(value) : undefined,
  };
}

/**
 * One ApiKey's mark in its keys' names: 6 hex of SHA-256 of `<namespace>/<name>`. The default
 * keyName (the resource's name) may be a namesake's in another namespace; with the mark, a recovery
 * after a status wipe takes only this ApiKey's keys. From the name, not the UID, so that a restored
 * ApiKey still knows its keys.
 */
export const keyToken = (namespace: string, name: string): string =>
  sha256(`${namespace}/${name}`).slice(0, 6);

/**
 * `<keyName>-<token>-<6 random [a-z0-9]>`: unique per attempt, so a key whose create answer was
 * lost can be found; the token says whose it is. At most 48 + 14 characters (the platform takes 64).
 */
export function pendingKeyName(keyName: string, token: string): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  const suffix = Array.from({ length: 6 }, () => alphabet[randomInt(alphabet.length)]).join("");
  return `${keyName}-${token}-${suffix}`;
}

/** An ApiKey's names and schedule, from its spec and its name. */
export function keyOf({ spec, obj }: { spec: ApiKeySpec; obj: KubeObject }) {
  const { name = "", namespace = "" } = obj.metadata;
  const keyName = spec.keyName ?? name;
  const token = keyToken(namespace, name);
  const named = (key: string, prefix: string) =>
    key.startsWith(prefix) && /^[a-z0-9]{6}$/.test(key.slice(prefix.length));
  return {
    /** The ApiKey (with apiVersion and kind): it owns the key's Secret. */
    owner: obj as Owner,
    namespace,
    keyName,
    token,
    secretName: spec.secretName ?? `${name}-api-key`,
    intervalMs: spec.rotation ? parseDuration(spec.rotation.interval) : undefined,
    gracePeriodMs: spec.rotation ? (parseDuration(spec.rotation.gracePeriod) ?? 0) : 0,
    /** A name this ApiKey gave (pendingKeyName): exactly its own, a namesake's never. */
    gave: (key: string) => named(key, `${keyName}-${token}-`),
    // The form before tokens (`<keyName>-<6 random>`), which a namesake may have given too:
    // trusted only for the key whose id this ApiKey's own Secret holds.
    gaveBeforeTokens: (key: string) => named(key, `${keyName}-`),
  };
}

export type Key = ReturnType<typeof keyOf>;

const words: Record<KeyStep["change"], [action: string, reason: string, event: string, message: string]> = {
  recover: ["Recover", "Recovering", "KeyRecovered", "taking the key back"],
  issue: ["Create", "CreatingKey", "KeyCreated", "creating a key"],
  resume: ["Create", "CreatingKey", "KeyCreated", "finishing a create"],
  replace: ["Replace", "ReplacingKey", "KeyCreated", "replacing the key"],
  "revoke-previous": ["Revoke", "RevokingKey", "KeyRevoked", "the rotation's grace period is over"],
  rotate: ["Rotate", "RotatingKey", "KeyRotated", "rotating the key"],
};

export function keyStep(change: KeyStep["change"]): KeyStep {
  const [action, reason, event, message] = words[change];
  return { change, action, reason, event, message };
}
