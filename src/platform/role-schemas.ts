/**
 * The platform's Postgres roles and connection URIs (snake_case wire, camelCase for the operator),
 * after the official OpenAPI document's `Role`, `RolesResponse`, `RolePasswordResponse`,
 * `RoleOperations` and `ConnectionURIResponse` (`public-v2-for-users.gen.yaml`). A password is
 * carried only where the operator asked for one (reveal, reset); a role listed or read carries
 * none, and zod drops one if it came.
 */
import { z } from "zod";
import { operationWire } from "./schemas.ts";

const roleWire = z
  .object({
    branch_id: z.string(),
    name: z.string(),
    protected: z.boolean().optional(),
    authentication_method: z.string().optional(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .transform((r) => ({
    branchId: r.branch_id,
    name: r.name,
    protected: r.protected ?? false,
    authenticationMethod: r.authentication_method,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }));

export type Role = z.output<typeof roleWire>;

export const rolesResponseWire = z.object({ roles: z.array(roleWire) });

export const rolePasswordWire = z.object({ password: z.string().min(1) });

/** A reset's answer: the role with its new password, and the operations it is valid after. */
export const passwordResetWire = z
  .object({
    role: z.object({ name: z.string(), password: z.string().min(1) }).loose(),
    operations: z.array(operationWire),
  })
  .transform((m) => ({ role: m.role.name, password: m.role.password, operations: m.operations }));

export type PasswordReset = z.output<typeof passwordResetWire>;

export const connectionUriWire = z.object({ uri: z.string().min(1) });

/** Which connection URI to ask for (`GET /projects/{project_id}/connection_uri`). */
export interface ConnectionUriQuery {
  branchId?: string;
  endpointId?: string;
  databaseName: string;
  roleName: string;
  /** The pooler's host instead of the endpoint's own. */
  pooled?: boolean;
}
