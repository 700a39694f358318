// What the platform accepts: request bodies and query parameters, as zod
// schemas. Unknown fields are ignored, as the platform does.
import { z } from "zod";
import { badRequest, type PlatformError } from "./errors.ts";

const id = z.string().regex(/^[a-z0-9-]{1,60}$/, "must match ^[a-z0-9-]{1,60}$");
const computeUnit = z.number().min(0.25);

const endpointFields = {
  autoscaling_limit_min_cu: computeUnit.optional(),
  autoscaling_limit_max_cu: computeUnit.optional(),
  provisioner: z.string().min(1).optional(),
  settings: z.object({ pg_settings: z.record(z.string(), z.string()).optional() }).optional(),
  pooler_enabled: z.boolean().optional(),
  pooler_mode: z.literal("transaction").optional(),
  disabled: z.boolean().optional(),
  passwordless_access: z.boolean().optional(),
  suspend_timeout_seconds: z.number().int().min(-1).max(604800).optional(),
  name: z.string().min(1).max(64).optional(),
};

export const createEndpointBody = z.object({
  endpoint: z.object({
    branch_id: id,
    type: z.enum(["read_write", "read_only"]),
    region_id: z.string().optional(),
    ...endpointFields,
  }),
});
export type CreateEndpointBody = z.infer<typeof createEndpointBody>["endpoint"];

export const updateEndpointBody = z.object({
  endpoint: z.object({ branch_id: id.optional(), ...endpointFields }),
});
export type UpdateEndpointBody = z.infer<typeof updateEndpointBody>["endpoint"];

/** RFC 3339 with at most whole seconds, as the document asks of `expires_at`. */
const timestamp = z.iso
  .datetime({ offset: true, precision: 0 })
  .or(z.iso.datetime({ offset: true, precision: -1 }));

export const createBranchBody = z
  .object({
    branch: z
      .object({
        parent_id: id.optional(),
        name: z.string().min(1).max(256).optional(),
        protected: z.boolean().optional(),
        expires_at: timestamp.optional(),
      })
      .optional(),
    endpoints: z
      .array(
        z.object({
          type: z.enum(["read_write", "read_only"]),
          autoscaling_limit_min_cu: computeUnit.optional(),
          autoscaling_limit_max_cu: computeUnit.optional(),
          provisioner: z.string().min(1).optional(),
          settings: z.object({ pg_settings: z.record(z.string(), z.string()).optional() }).optional(),
          suspend_timeout_seconds: z.number().int().min(-1).max(604800).optional(),
        }),
      )
      .optional(),
  })
  .default({});
export type CreateBranchBody = z.infer<typeof createBranchBody>;

export const updateBranchBody = z.object({
  branch: z.object({
    name: z.string().min(1).max(256).optional(),
    protected: z.boolean().optional(),
    expires_at: timestamp.nullable().optional(),
  }),
});
export type UpdateBranchBody = z.infer<typeof updateBranchBody>["branch"];

const postgresName = z.string().min(1);

export const createRoleBody = z.object({
  role: z.object({ name: postgresName, no_login: z.boolean().optional() }),
});

export const createDatabaseBody = z.object({
  database: z.object({ name: postgresName, owner_name: postgresName }),
});

export const updateDatabaseBody = z.object({
  database: z.object({ name: postgresName.optional(), owner_name: postgresName.optional() }),
});

export const restoreBranchBody = z.object({
  source_branch_id: id,
  source_lsn: z.string().min(1).optional(),
  source_timestamp: z.iso.datetime({ offset: true }).optional(),
  preserve_under_name: z.string().max(256).optional(),
});
export type RestoreBranchBody = z.infer<typeof restoreBranchBody>;

export const connectionUriQuery = z.object({
  branch_id: id.optional(),
  endpoint_id: id.optional(),
  database_name: postgresName,
  role_name: postgresName,
  pooled: z.enum(["true", "false"]).optional(),
});
export type ConnectionUriQuery = z.infer<typeof connectionUriQuery>;

export const createApiKeyBody = z.object({ key_name: z.string().max(64) });

const limit = (max: number) => z.coerce.number().int().min(1).max(max);

export const listProjectsQuery = z.object({
  limit: limit(400).default(10),
  cursor: z.string().optional(),
  search: z.string().optional(),
  org_id: id.optional(),
});

/** The document's `LimitParam` allows up to 10,000; without one a page is small (branch-list.ts). */
export const listBranchesQuery = z.object({
  limit: limit(10_000).default(10),
  cursor: z.string().optional(),
  sort_by: z.enum(["name", "created_at", "updated_at"]).default("updated_at"),
  sort_order: z.enum(["asc", "desc"]).default("desc"),
  search: z.string().optional(),
  include_deleted: z.enum(["true", "false"]).optional(),
});

export const listOperationsQuery = z.object({
  limit: limit(1000).default(10),
  cursor: z.string().optional(),
});

/** Parses `value` or throws the platform's 400 naming the offending fields. */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw describeIssues(result.error);
}

function describeIssues(error: z.ZodError): PlatformError {
  const parts = error.issues.map((issue) =>
    issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message,
  );
  return badRequest(parts.join("; "));
}
