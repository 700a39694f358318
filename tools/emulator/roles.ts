// Postgres roles of a branch through the platform API: create (with a
// password from the start), delete, reveal and reset the password. A reset's
// new password works once its operations finish; the old one works until then.
import {
  applyCatalogChange,
  assertCatalogChangeable,
  checkIdentifier,
  databasesOf,
  findRole,
  newRole,
  rolesOf,
  storedPassword,
} from "./catalog.ts";
import { PlatformError, badRequest } from "./errors.ts";
import { newRolePassword } from "./ids.ts";
import type { BranchRecord, OperationRecord, ProjectRecord, RoleRecord } from "./model.ts";
import type { World } from "./world.ts";

export interface RoleChange {
  role: RoleRecord;
  /** The password to show in the response: a new role's, or a reset's new one. */
  password?: string;
  operations: OperationRecord[];
}

/** Names Postgres or the platform keeps for itself. */
const reservedRoleNames = new Set(["postgres", "public", "cloud_admin", "neon_superuser", "neon_service"]);

/** A role name Postgres and the platform accept (400 naming `field` otherwise). */
export function checkRoleName(field: string, name: string): void {
  checkIdentifier(field, name);
  if (reservedRoleNames.has(name) || name.startsWith("pg_"))
    throw badRequest(`${field}: ${name} is reserved`);
}

export function createRole(
  world: World,
  branch: BranchRecord,
  body: { name: string; no_login?: boolean | undefined },
  now: number,
): RoleChange {
  checkRoleName("role.name", body.name);
  if (rolesOf(branch).some((r) => r.name === body.name)) {
    throw new PlatformError(409, `role ${body.name} already exists`);
  }
  assertCatalogChangeable(world, branch);
  const role = newRole(body.name, now, { login: body.no_login !== true });
  rolesOf(branch).push(role);
  const operations = applyCatalogChange(world, branch, now);
  return { role, ...(role.password === undefined ? {} : { password: role.password }), operations };
}

/** Postgres refuses to drop a role that owns a database, and the platform with it (422). */
export function deleteRole(world: World, branch: BranchRecord, name: string, now: number): RoleChange {
  const role = findRole(branch, name);
  const owned = databasesOf(branch).filter((d) => d.ownerName === name);
  if (owned.length > 0) {
    throw new PlatformError(
      422,
      `role ${name} owns database ${owned.map((d) => d.name).join(", ")}: delete it or change its owner first`,
    );
  }
  assertCatalogChangeable(world, branch);
  branch.roles = rolesOf(branch).filter((r) => r !== role);
  return { role, operations: applyCatalogChange(world, branch, now) };
}

/** 412 when the project does not keep passwords; otherwise the stored one (a pending reset's new one). */
export const revealPassword = (project: ProjectRecord, branch: BranchRecord, name: string): string =>
  storedPassword(project, findRole(branch, name));

/**
 * A new password for the role. It takes over when the last operation finishes (at once when
 * the branch has no compute to reconfigure); until then the old one is the one that works.
 */
export function resetPassword(world: World, branch: BranchRecord, name: string, now: number): RoleChange {
  const role = findRole(branch, name);
  if (role.password === undefined) throw new PlatformError(422, `role ${name} cannot log in`);
  assertCatalogChangeable(world, branch);
  const value = newRolePassword();
  role.updatedAt = now;
  const operations = applyCatalogChange(world, branch, now);
  const last = operations.at(-1);
  if (last === undefined) role.password = value;
  else role.pendingPassword = { value, operationId: last.id };
  return { role, password: value, operations };
}
