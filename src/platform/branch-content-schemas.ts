/**
 * What a branch holds besides its own record: Postgres roles and databases, and the restore that
 * resets it from another branch. After the official OpenAPI document's `Role`, `Database`,
 * `RoleCreateRequest`, `DatabaseCreateRequest`, `BranchRestoreRequest` and their responses
 * (`public-v2-for-users.gen.yaml`). A role's `password` (x-sensitive in the document) is left out
 * of the parsed role on purpose, so it can never reach a log, an event or a status.
 */
import { z } from "zod";
import { branchWire } from "./branch-schemas.ts";
import { operationWire } from "./schemas.ts";

const timestamp = z.string();

export const roleWire = z
  .object({
    branch_id: z.string(),
    name: z.string(),
    protected: z.boolean().optional(),
    authentication_method: z.string().optional(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .transform((r) => ({
    branchId: r.branch_id,
    name: r.name,
    protected: r.protected ?? false,
    createdAt: r.created_at,
  }));
export type Role = z.output<typeof roleWire>;

export const databaseWire = z
  .object({
    id: z.number().int(),
    branch_id: z.string(),
    name: z.string(),
    owner_name: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .transform((d) => ({
    id: d.id,
    branchId: d.branch_id,
    name: d.name,
    ownerName: d.owner_name,
    createdAt: d.created_at,
  }));
export type Database = z.output<typeof databaseWire>;

export const rolesResponseWire = z.object({ roles: z.array(roleWire) });
export const databasesResponseWire = z.object({ databases: z.array(databaseWire) });

/** A role create answers the role (with its password, dropped here) and its `apply_config`. */
export const roleMutationWire = z.object({ role: roleWire, operations: z.array(operationWire) });
export type RoleMutation = z.output<typeof roleMutationWire>;

export const databaseMutationWire = z.object({
  database: databaseWire,
  operations: z.array(operationWire),
});
export type DatabaseMutation = z.output<typeof databaseMutationWire>;

/** A restore answers the restored branch and its operations (`BranchOperations`). */
export const branchRestoreWire = z.object({ branch: branchWire, operations: z.array(operationWire) });
export type BranchRestore = z.output<typeof branchRestoreWire>;

/** A database to create (camelCase of `DatabaseCreateRequest.database`). */
export interface DatabaseCreateSpec {
  name: string;
  ownerName: string;
}

export function roleBody(name: string): { role: { name: string } } {
  return { role: { name } };
}

export function databaseBody(spec: DatabaseCreateSpec): { database: { name: string; owner_name: string } } {
  return { database: { name: spec.name, owner_name: spec.ownerName } };
}

/**
 * A restore from another branch's head (`BranchRestoreRequest`): with the parent as source, the
 * branch is reset to the parent's current data. `preserveUnderName` keeps the old state as a
 * branch of that name (the platform requires it when the branch has children).
 */
export interface BranchRestoreSpec {
  sourceBranchId: string;
  preserveUnderName?: string;
}

export function restoreBody(spec: BranchRestoreSpec): Record<string, string> {
  return {
    source_branch_id: spec.sourceBranchId,
    ...(spec.preserveUnderName === undefined ? {} : { preserve_under_name: spec.preserveUnderName }),
  };
}
