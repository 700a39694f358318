// From a Branch's spec to what the platform should hold: its name, the create body's expiry, and
// the one PATCH of the fields that differ. Pure functions, so the rules (which fields are managed,
// when a TTL is computed, what a vanished branch means) sit in one place, apart from any I/O.
import type { BranchSpec, BranchStatus } from "../../api/branch.ts";
import type { Branch, BranchPatch } from "../../platform/index.ts";
import { parseDuration } from "../../runtime/index.ts";

/** The branch annotation that holds the owner mark of the resource that created it. */
export const ownerAnnotation = "neoncloud.dev/owner";

/** The name an earlier version gave the branches it created when the spec named none. */
export function creationName(uid: string): string {
  return `k8s-${uid}`;
}

/**
 * The name the branch should have: the spec's, else the resource's owner mark (known before the
 * create is sent, so a branch whose answer was lost is found again); undefined for an adopted
 * branch the spec does not rename.
 */
export function desiredName(spec: BranchSpec, mark: string): string | undefined {
  return spec.name ?? (spec.branchId ? undefined : mark);
}

/** RFC 3339 in whole seconds, as the platform writes timestamps. */
function rfc3339(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * The expiry to send with the create: `expiresAt` as written, or now + `ttl` (computed this once;
 * afterwards the branch's own `expires_at` is kept). Undefined: the branch does not expire.
 */
export function creationExpiry(spec: BranchSpec, now: Date): string | undefined {
  if (spec.expiresAt !== undefined) return spec.expiresAt;
  if (spec.ttl === undefined) return undefined;
  const ms = parseDuration(spec.ttl);
  if (ms === undefined) throw new Error(`spec.ttl: "${spec.ttl}" is not a duration`);
  return rfc3339(now.getTime() + ms);
}

/** The expiry in the future, or the words that say why not (the API server has no clock rule). */
export function expiryProblem(expiresAt: string | undefined, now: Date): string | undefined {
  if (expiresAt === undefined) return undefined;
  const at = Date.parse(expiresAt);
  if (Number.isNaN(at)) return `spec.expiresAt: "${expiresAt}" is not an RFC 3339 timestamp`;
  if (at <= now.getTime()) return `spec.expiresAt: ${expiresAt} is not in the future`;
  return undefined;
}

/**
 * The PATCH that brings the branch to the spec, or undefined when it matches. Only what the spec
 * states is managed: no `protected` leaves protection as it is; no `expiresAt` or `ttl` leaves the
 * expiry as it is; a `ttl` sets an expiry only on a branch that has none (an adopted one).
 */
export function plan(spec: BranchSpec, branch: Branch, mark: string, now: Date): BranchPatch | undefined {
  const patch: BranchPatch = {};
  const name = desiredName(spec, mark);
  if (name !== undefined && branch.name !== name) patch.name = name;
  if (spec.protected !== undefined && branch.protected !== spec.protected) patch.protected = spec.protected;
  if (spec.expiresAt !== undefined) {
    const current = branch.expiresAt === undefined ? undefined : Date.parse(branch.expiresAt);
    if (current !== Date.parse(spec.expiresAt)) patch.expiresAt = spec.expiresAt;
  } else if (spec.ttl !== undefined && branch.expiresAt === undefined) {
    patch.expiresAt = creationExpiry(spec, now);
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** Why a branch this resource had is gone: the platform's expiry, or a deletion elsewhere. */
export function vanished(
  status: BranchStatus,
  now: Date,
): { reason: "Expired" | "BranchDeleted"; message: string } {
  const id = status.branchId ?? "(unknown)";
  if (status.expiresAt !== undefined && Date.parse(status.expiresAt) <= now.getTime()) {
    return {
      reason: "Expired",
      message: `branch ${id} expired at ${status.expiresAt} and the platform deleted it; it is not recreated (delete this resource, or re-create it for a new branch)`,
    };
  }
  return {
    reason: "BranchDeleted",
    message: `branch ${id} was deleted outside the operator; it is not recreated, its data is gone (delete this resource, or re-create it for a new branch)`,
  };
}

/** A branch clients can query: ready, or archived (slower, still served). */
export function usable(branch: Branch): boolean {
  return branch.currentState === "ready" || branch.currentState === "archived";
}
