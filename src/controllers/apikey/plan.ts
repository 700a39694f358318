// What is due on an ApiKey's key, in the order it is handled, one step per pass: a key this
// ApiKey's Secret holds while status lost it, a create a crash interrupted (its key may be live in
// nobody's hands), no key yet, a Secret that lost the key, a key revoked behind our back, a
// previous key whose grace period is over, a rotation. Pure, so the order is tested on its own.
import type { ApiKeyStatus } from "../../api/apikey.ts";
import type { Secret } from "../credentials.ts";
import type { Step } from "../managed/types.ts";
import { storedKey } from "./secret.ts";

/** What is due on a key that exists, in the order it is handled. */
export type Due = "resume" | "replace" | "revoked-externally" | "revoke-previous" | "rotate";

export type KeyStep = Step & { change: Due | "recover" | "issue" };

export function dueSteps(
  status: ApiKeyStatus,
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
export function intact(secret: Secret | undefined, status: ApiKeyStatus): boolean {
  const stored = storedKey(secret);
  return (
    stored !== undefined &&
    stored.keyId === status.keyId &&
    stored.fingerprint !== undefined &&
    (status.keyFingerprint === undefined || stored.fingerprint === status.keyFingerprint)
  );
}

const words: Record<KeyStep["change"], Omit<KeyStep, "change">> = {
  recover: { action: "Recover", reason: "Recovering", event: "KeyRecovered", message: "taking the key back" },
  issue: { action: "Create", reason: "CreatingKey", event: "KeyCreated", message: "creating a key" },
  resume: { action: "Create", reason: "CreatingKey", event: "KeyCreated", message: "finishing a create" },
  replace: { action: "Replace", reason: "ReplacingKey", event: "KeyCreated", message: "replacing the key" },
  "revoked-externally": {
    action: "Replace",
    reason: "ReplacingKey",
    event: "KeyCreated",
    message: "replacing a key revoked elsewhere",
  },
  "revoke-previous": {
    action: "Revoke",
    reason: "RevokingKey",
    event: "KeyRevoked",
    message: "the rotation's grace period is over",
  },
  rotate: { action: "Rotate", reason: "RotatingKey", event: "KeyRotated", message: "rotating the key" },
};

export function keyStep(change: KeyStep["change"]): KeyStep {
  return { change, ...words[change] };
}
