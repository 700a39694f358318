// A branch's Postgres catalog as the platform keeps it: roles (with their
// passwords) and databases. A project's default branch starts with an owner
// role and a database; a child branch copies its parent's. Changing the
// catalog of a branch with computes runs `apply_config` on each of them.
import { PlatformError, notFound } from "./errors.ts";
import { newRolePassword } from "./ids.ts";
import type { BranchRecord, DatabaseRecord, OperationRecord, ProjectRecord, RoleRecord } from "./model.ts";
import type { OperationSpec, World } from "./world.ts";

/** The role and database the platform creates with a project (its create request may name others). */
export const defaultRoleName = "neondb_owner";
export const defaultDatabaseName = "neondb";

export const rolesOf = (branch: BranchRecord): RoleRecord[] => (branch.roles ??= []);
export const databasesOf = (branch: BranchRecord): DatabaseRecord[] => (branch.databases ??= []);

export function findRole(branch: BranchRecord, name: string): RoleRecord {
  const role = rolesOf(branch).find((r) => r.name === name);
  if (!role) throw notFound(`role ${name}`);
  return role;
}

export function findDatabase(branch: BranchRecord, name: string): DatabaseRecord {
  const database = databasesOf(branch).find((d) => d.name === name);
  if (!database) throw notFound(`database ${name}`);
  return database;
}

export function newRole(name: string, now: number, { login = true } = {}): RoleRecord {
  return {
    name,
    ...(login ? { password: newRolePassword() } : {}),
    protected: false,
    createdAt: now,
    updatedAt: now,
  };
}

export function newDatabase(world: World, name: string, ownerName: string, now: number): DatabaseRecord {
  return { id: world.nextDatabaseId++, name, ownerName, createdAt: now, updatedAt: now };
}

/** A new project's default branch: its owner role and database. */
export function seedCatalog(
  world: World,
  branch: BranchRecord,
  roleName: string,
  databaseName: string,
  now: number,
): void {
  branch.roles = [newRole(roleName, now)];
  branch.databases = [newDatabase(world, databaseName, roleName, now)];
}

/**
 * A child branch starts with its parent's roles (with the passwords that work on the parent
 * now) and databases, as the catalog is part of the data it copies. From a past point (`asOf`),
 * those made later are left out (and a database renamed or deleted since is as it is now).
 */
export function copyCatalog(
  world: World,
  from: BranchRecord,
  to: BranchRecord,
  now: number,
  asOf: number = Infinity,
): void {
  const databases = databasesOf(from).filter((d) => d.createdAt <= asOf);
  const owners = new Set(databases.map((d) => d.ownerName));
  const roles = rolesOf(from).filter((r) => r.createdAt <= asOf || owners.has(r.name));
  copyCatalogRecords(world, { roles, databases }, to, now);
}

/** Gives `to` copies of these roles (with their passwords) and databases (with new ids). */
export function copyCatalogRecords(
  world: World,
  from: { roles: readonly RoleRecord[]; databases: readonly DatabaseRecord[] },
  to: { roles?: RoleRecord[]; databases?: DatabaseRecord[] },
  now: number,
): void {
  to.roles = from.roles.map((role) => {
    const password = currentPassword(world, role);
    return {
      name: role.name,
      ...(password === undefined ? {} : { password }),
      protected: role.protected,
      createdAt: now,
      updatedAt: now,
    };
  });
  to.databases = from.databases.map((d) => newDatabase(world, d.name, d.ownerName, now));
}

/**
 * The password a connection must give now. A reset's new password takes over once its last
 * operation has succeeded (or was dropped from the retained history, which keeps only settled
 * ones); if that operation failed, the reset did not happen.
 */
export function currentPassword(world: World, role: RoleRecord): string | undefined {
  const pending = role.pendingPassword;
  if (pending) {
    const op = world.operations.get(pending.operationId);
    const status = op?.status ?? "finished";
    if (status === "finished" || status === "skipped") {
      role.password = pending.value;
      delete role.pendingPassword;
    } else if (status === "error" || status === "cancelled") {
      delete role.pendingPassword;
    }
  }
  return role.password;
}

/**
 * The password the platform stores for the role, as `reveal_password` and `connection_uri` show
 * it: a reset's new one at once. 412 when the project does not keep passwords.
 */
export function storedPassword(project: ProjectRecord, role: RoleRecord): string {
  if (project.storePasswords === false) {
    throw new PlatformError(412, "storing passwords is disabled for this project");
  }
  const password = role.pendingPassword?.value ?? role.password;
  if (password === undefined) throw new PlatformError(422, `role ${role.name} cannot log in`);
  return password;
}

/** Refuses a catalog change the branch's state forbids: not created yet (422), or its project busy (423). */
export function assertCatalogChangeable(world: World, branch: BranchRecord): void {
  if (branch.currentState === "init") throw new PlatformError(422, "branch not ready yet");
  world.assertUnlocked(branch.projectId, [branch.id]);
}

/**
 * Applies a catalog change to the branch's computes: `apply_config` on each; an idle one is
 * woken for it and suspended afterwards (the document's examples show that `suspend_compute`,
 * which ends `skipped` here as the emulated compute never left `idle`). No compute: nothing runs.
 */
export function applyCatalogChange(world: World, branch: BranchRecord, now: number): OperationRecord[] {
  const chain: OperationSpec[] = world
    .endpointsOfBranch(branch.id)
    .flatMap((e) => [
      { action: "apply_config" as const, branchId: branch.id, endpointId: e.id },
      ...(e.currentState === "idle"
        ? [{ action: "suspend_compute" as const, branchId: branch.id, endpointId: e.id }]
        : []),
    ]);
  if (chain.length === 0) {
    world.changed();
    return [];
  }
  return world.startOperations(branch.projectId, chain, now);
}

/** Postgres identifiers are at most 63 bytes. */
export function checkIdentifier(field: string, name: string): void {
  if (Buffer.byteLength(name) > 63) throw new PlatformError(400, `${field}: cannot exceed 63 bytes`);
}
