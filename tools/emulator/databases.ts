// Postgres databases of a branch through the platform API: create (owned by
// one of the branch's roles), rename or change owner, delete.
import {
  applyCatalogChange,
  assertCatalogChangeable,
  checkIdentifier,
  databasesOf,
  findDatabase,
  newDatabase,
  rolesOf,
} from "./catalog.ts";
import { PlatformError, badRequest } from "./errors.ts";
import type { BranchRecord, DatabaseRecord, OperationRecord } from "./model.ts";
import type { World } from "./world.ts";

export interface DatabaseChange {
  database: DatabaseRecord;
  operations: OperationRecord[];
}

/** Databases every Postgres has already. */
const reservedDatabaseNames = new Set(["postgres", "template0", "template1"]);

/** A database name Postgres and the platform accept (400 naming `field` otherwise). */
export function checkDatabaseName(field: string, name: string): void {
  checkIdentifier(field, name);
  if (reservedDatabaseNames.has(name)) throw badRequest(`${field}: ${name} is reserved`);
}

function checkName(branch: BranchRecord, name: string): void {
  checkDatabaseName("database.name", name);
  if (databasesOf(branch).some((d) => d.name === name)) {
    throw new PlatformError(409, `database ${name} already exists`);
  }
}

function checkOwner(branch: BranchRecord, ownerName: string): void {
  if (!rolesOf(branch).some((r) => r.name === ownerName)) {
    throw badRequest(`database.owner_name: the branch has no role ${ownerName}`);
  }
}

export function createDatabase(
  world: World,
  branch: BranchRecord,
  body: { name: string; owner_name: string },
  now: number,
): DatabaseChange {
  checkName(branch, body.name);
  checkOwner(branch, body.owner_name);
  assertCatalogChangeable(world, branch);
  const database = newDatabase(world, body.name, body.owner_name, now);
  databasesOf(branch).push(database);
  return { database, operations: applyCatalogChange(world, branch, now) };
}

export function updateDatabase(
  world: World,
  branch: BranchRecord,
  name: string,
  body: { name?: string | undefined; owner_name?: string | undefined },
  now: number,
): DatabaseChange {
  const database = findDatabase(branch, name);
  if (body.name !== undefined && body.name !== name) checkName(branch, body.name);
  if (body.owner_name !== undefined) checkOwner(branch, body.owner_name);
  assertCatalogChangeable(world, branch);
  if (body.name !== undefined && body.name !== name) {
    database.name = body.name;
    world.data?.databaseRenamed(branch, name, body.name);
  }
  if (body.owner_name !== undefined) database.ownerName = body.owner_name;
  database.updatedAt = now;
  return { database, operations: applyCatalogChange(world, branch, now) };
}

export function deleteDatabase(
  world: World,
  branch: BranchRecord,
  name: string,
  now: number,
): DatabaseChange {
  const database = findDatabase(branch, name);
  assertCatalogChangeable(world, branch);
  branch.databases = databasesOf(branch).filter((d) => d !== database);
  world.data?.databaseDeleted(branch, name);
  return { database, operations: applyCatalogChange(world, branch, now) };
}
