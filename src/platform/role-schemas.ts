/**
 * Role passwords and connection URIs (snake_case wire, camelCase for the operator), after the
 * official OpenAPI document's `RolePasswordResponse`, `RoleOperations` and `ConnectionURIResponse`
 * (`public-v2-for-users.gen.yaml`). A password is carried only where the operator asked for one
 * (reveal, reset); the roles themselves are in branch-content-schemas.ts, without passwords.
 */
import { z } from "zod";
import { operationWire } from "./schemas.ts";

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
