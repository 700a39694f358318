// A Snapshot's plan, pure so its rules are tested apart from any I/O: the name and expiry it is
// taken with, what status shows, the one change a snapshot that exists needs, and what a snapshot
// gone since it was recorded means.
import type { SnapshotSpec, SnapshotStatus } from "../../api/snapshot.ts";
import type { Snapshot, SnapshotPatch } from "../../platform/index.ts";
import { parseDuration } from "../../runtime/index.ts";
import type { Step } from "../managed/kind.ts";
import { Refusal, invalidSpec } from "../managed/refusal.ts";

export type SnapshotStep = Step & { change: "update"; patch: SnapshotPatch };

/** The spec's name, else the owner mark (known before the create: a lost answer's snapshot is found by it). */
export function desiredName(spec: SnapshotSpec, mark: string): string | undefined {
  return spec.name ?? (spec.snapshotId ? undefined : mark);
}

/** The expiry it is taken with: `expiresAt`, or now + `ttl` (computed once). */
export function creationExpiry(spec: SnapshotSpec, now: Date): string | undefined {
  if (spec.expiresAt !== undefined || spec.ttl === undefined) return spec.expiresAt;
  const ms = parseDuration(spec.ttl);
  if (ms === undefined) throw invalidSpec(`spec.ttl: "${spec.ttl}" is not a duration`);
  return new Date(Math.ceil((now.getTime() + ms) / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** An expiry in the past is refused before anything is sent. */
export function expiryProblem(expiresAt: string | undefined, now: Date): string | undefined {
  if (expiresAt === undefined) return undefined;
  const at = Date.parse(expiresAt);
  if (Number.isNaN(at)) return `spec.expiresAt: "${expiresAt}" is not an RFC 3339 timestamp`;
  return at <= now.getTime() ? `spec.expiresAt: ${expiresAt} is not in the future` : undefined;
}

/** The one change: a rename, or the expiry the spec states. Undefined: as declared. */
export function plan(
  spec: SnapshotSpec,
  snapshot: Snapshot,
  mark: string,
  now: Date,
): SnapshotStep | undefined {
  const patch: SnapshotPatch = {};
  const name = desiredName(spec, mark);
  if (name !== undefined && snapshot.name !== name) patch.name = name;
  if (spec.expiresAt !== undefined) {
    const current = snapshot.expiresAt === undefined ? undefined : Date.parse(snapshot.expiresAt);
    if (current !== Date.parse(spec.expiresAt)) {
      const problem = expiryProblem(spec.expiresAt, now);
      if (problem) throw invalidSpec(problem);
      patch.expiresAt = spec.expiresAt;
    }
  }
  const changes = Object.keys(patch);
  if (changes.length === 0) return undefined;
  return {
    action: "Update",
    reason: "Updating",
    message: `updating ${changes.join(", ")} of snapshot ${snapshot.id}`,
    change: "update",
    patch,
  };
}

/** The snapshot's fields in status. */
export function snapshotStatus(s: Snapshot): Partial<SnapshotStatus> {
  return {
    snapshotId: s.id,
    name: s.name,
    sourceBranchId: s.sourceBranchId,
    createdAt: s.createdAt,
    timestamp: s.timestamp,
    lsn: s.lsn,
    expiresAt: s.expiresAt,
    fullSize: s.fullSize,
    diffSize: s.diffSize,
  };
}

/** Gone since it was recorded: expired, or deleted elsewhere. Never taken again: its point is past. */
export function vanished(status: SnapshotStatus, now: Date): Refusal<SnapshotStatus> {
  const expired = status.expiresAt !== undefined && Date.parse(status.expiresAt) <= now.getTime();
  const [reason, what] = expired
    ? ["Expired", `expired at ${status.expiresAt} and the platform deleted it`]
    : ["SnapshotDeleted", "was deleted outside the operator"];
  return new Refusal(
    reason,
    "spec",
    `snapshot ${status.snapshotId ?? "(unknown)"} ${what}; it is not taken again (the data it kept is gone): delete this resource, or re-create it for a new snapshot`,
  );
}
