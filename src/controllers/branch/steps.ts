// The next change a present branch needs, one at a time, in the order that lets each succeed: a
// reset from the parent first (it replaces the branch's data, roles and databases included), then
// the branch's own fields, then missing roles, then missing databases (their owners must exist).
// Pure functions, so the order and the refusals are tested apart from any I/O.
import { restoredFromParentAtAnnotation } from "../../api/group.ts";
import type { BranchSpec, BranchStatus } from "../../api/branch.ts";
import type { Branch, BranchPatch, Database, Role } from "../../platform/index.ts";
import type { Step } from "../managed/types.ts";

export type BranchStep = Step &
  (
    | { change: "restore"; restoredFromParentAt: string; parentId: string }
    | { change: "update"; patch: BranchPatch }
    | { change: "createRole"; name: string }
    | { change: "createDatabase"; name: string; owner: string }
  );

/** The roles and databases the branch has, when they were listed this pass. */
export interface BranchContent {
  roles: readonly Pick<Role, "name">[];
  databases: readonly Pick<Database, "name" | "ownerName">[];
}

/** The annotation's value when it asks for a reset not acted upon yet. */
export function restoreRequested(
  annotation: string | undefined,
  status: Pick<BranchStatus, "restoredFromParentAt">,
): string | undefined {
  return annotation !== undefined && annotation !== status.restoredFromParentAt ? annotation : undefined;
}

/** The reset from the parent the annotation asks for, or why it cannot be done (no parent). */
export function restoreStep(
  branch: Pick<Branch, "id" | "parentId">,
  value: string,
): BranchStep | { problem: string } {
  if (branch.parentId === undefined) {
    return {
      problem: `${restoredFromParentAtAnnotation}=${value}: branch ${branch.id} has no parent (it is the project's root branch), so there is nothing to reset it from; remove the annotation`,
    };
  }
  return {
    change: "restore",
    restoredFromParentAt: value,
    parentId: branch.parentId,
    action: "Restore",
    reason: "Restoring",
    message: `resetting branch ${branch.id} from its parent ${branch.parentId} (${restoredFromParentAtAnnotation}=${value})`,
  };
}

/** One PATCH of the branch's own fields. */
export function updateStep(patch: BranchPatch, branchId: string): BranchStep {
  return {
    change: "update",
    patch,
    action: "Update",
    reason: "Updating",
    message: `updating ${Object.keys(patch).join(", ")} of branch ${branchId}`,
  };
}

/** Whether roles and databases must be listed this pass: the spec wants some the status does not show. */
export function contentUnknown(
  spec: Pick<BranchSpec, "roles" | "databases">,
  status: Pick<BranchStatus, "roles" | "databases" | "observedGeneration">,
  generation: number | undefined,
): boolean {
  const roles = spec.roles ?? [];
  const databases = spec.databases ?? [];
  if (roles.length === 0 && databases.length === 0) return false;
  // A new generation looks again, so a role or database deleted elsewhere is noticed on a spec change.
  if (status.observedGeneration !== generation) return true;
  const seenRoles = new Set(status.roles ?? []);
  const seenDatabases = new Set((status.databases ?? []).map((d) => d.name));
  return roles.some((r) => !seenRoles.has(r.name)) || databases.some((d) => !seenDatabases.has(d.name));
}

/** What the status shows of the roles and databases the spec names: those the branch has. */
export function contentStatus(
  spec: Pick<BranchSpec, "roles" | "databases">,
  content: BranchContent,
): Pick<BranchStatus, "roles" | "databases"> {
  const roles = new Set(content.roles.map((r) => r.name));
  const databases = new Map(content.databases.map((d) => [d.name, d.ownerName]));
  const wanted = new Set((spec.databases ?? []).map((d) => d.name));
  return {
    roles: (spec.roles ?? []).map((r) => r.name).filter((name) => roles.has(name)),
    databases: [...databases].filter(([name]) => wanted.has(name)).map(([name, owner]) => ({ name, owner })),
  };
}

/**
 * The first missing role, else the first missing database whose owner exists. A database whose
 * owner is neither on the branch nor in spec.roles is an error naming the field (the API server
 * cannot check it: the branch's roles come from its parent too).
 */
export function contentStep(
  spec: Pick<BranchSpec, "roles" | "databases">,
  content: BranchContent,
  branchId: string,
): BranchStep | { problem: string } | undefined {
  const roles = new Set(content.roles.map((r) => r.name));
  const missingRole = (spec.roles ?? []).find((r) => !roles.has(r.name));
  if (missingRole) {
    return {
      change: "createRole",
      name: missingRole.name,
      action: "CreateRole",
      reason: "CreatingRole",
      message: `creating role ${missingRole.name} on branch ${branchId}`,
    };
  }
  const databases = new Set(content.databases.map((d) => d.name));
  const all = spec.databases ?? [];
  for (const [i, db] of all.entries()) {
    if (databases.has(db.name)) continue;
    if (!roles.has(db.owner)) {
      return {
        problem: `spec.databases[${i}].owner: role ${db.owner} is neither in spec.roles nor on branch ${branchId}`,
      };
    }
    return {
      change: "createDatabase",
      name: db.name,
      owner: db.owner,
      action: "CreateDatabase",
      reason: "CreatingDatabase",
      message: `creating database ${db.name} owned by ${db.owner} on branch ${branchId}`,
    };
  }
  return undefined;
}
