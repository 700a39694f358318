// What the platform accepts: request bodies and query parameters, as zod
// schemas. Unknown fields are ignored, as the platform does.
import { isIP } from "node:net";
import { z } from "zod";
import { badRequest, type PlatformError } from "./errors.ts";

const id = z.string().regex(/^[a-z0-9-]{1,60}$/, "must match ^[a-z0-9-]{1,60}$");
const computeUnit = z.number().min(0.25);
const suspendTimeout = z.number().int().min(-1).max(604800);
const pgSettings = z.record(z.string(), z.string());

const endpointFields = {
  autoscaling_limit_min_cu: computeUnit.optional(),
  autoscaling_limit_max_cu: computeUnit.optional(),
  provisioner: z.string().min(1).optional(),
  settings: z.object({ pg_settings: z.record(z.string(), z.string()).optional() }).optional(),
  pooler_enabled: z.boolean().optional(),
  pooler_mode: z.literal("transaction").optional(),
  disabled: z.boolean().optional(),
  passwordless_access: z.boolean().optional(),
  suspend_timeout_seconds: suspendTimeout.optional(),
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

/** `AnnotationValueData`: a string map of at most 50 entries. */
const annotationValue = z
  .record(z.string(), z.string())
  .refine((value) => Object.keys(value).length <= 50, "at most 50 entries");

/** RFC 3339 at any precision, as a point of a branch's history may be given. */
const pointInTime = z.iso.datetime({ offset: true });

/** `BranchCreateRequest`. */
const branchCreateRequest = z.object({
  branch: z
    .object({
      parent_id: id.optional(),
      name: z.string().min(1).max(256).optional(),
      protected: z.boolean().optional(),
      expires_at: timestamp.optional(),
      parent_lsn: z.string().min(1).optional(),
      parent_timestamp: pointInTime.optional(),
      init_source: z.enum(["schema-only", "parent-data"]).optional(),
    })
    .optional(),
  endpoints: z
    .array(
      z.object({
        type: z.enum(["read_write", "read_only"]),
        autoscaling_limit_min_cu: computeUnit.optional(),
        autoscaling_limit_max_cu: computeUnit.optional(),
        provisioner: z.string().min(1).optional(),
        settings: z.object({ pg_settings: pgSettings.optional() }).optional(),
        suspend_timeout_seconds: suspendTimeout.optional(),
      }),
    )
    .optional(),
  annotation_value: annotationValue.optional(),
});
export const createBranchBody = branchCreateRequest.default({});
export type CreateBranchBody = z.infer<typeof createBranchBody>;

/** `MaskingRule` (one of `masking_function` and `masking_value` is checked in masking/rules.ts). */
const maskingRule = z.object({
  database_name: z.string().min(1),
  schema_name: z.string().min(1),
  table_name: z.string().min(1),
  column_name: z.string().min(1),
  masking_function: z.string().min(1).optional(),
  masking_value: z.string().min(1).optional(),
});

/** `BranchAnonymizedCreateRequest`. */
export const createAnonymizedBranchBody = z
  .object({
    branch_create: branchCreateRequest.optional(),
    masking_rules: z.array(maskingRule).optional(),
    start_anonymization: z.boolean().optional(),
    annotation_value: annotationValue.optional(),
  })
  .default({});
export type CreateAnonymizedBranchBody = z.infer<typeof createAnonymizedBranchBody>;

export const updateMaskingRulesBody = z.object({ masking_rules: z.array(maskingRule) });

/** The query of `POST .../branches/{branch_id}/snapshot` (`slug`: the platform's newer SDK sends one). */
export const createSnapshotQuery = z.object({
  lsn: z.string().min(1).optional(),
  timestamp: pointInTime.optional(),
  name: z.string().min(1).max(256).optional(),
  expires_at: pointInTime.optional(),
  slug: id.optional(),
});
export type CreateSnapshotQuery = z.infer<typeof createSnapshotQuery>;

/**
 * `SnapshotUpdateRequest`. The document shows `name` only; the platform's newer SDK sends
 * `expires_at` too (`null` clears it), so it is accepted.
 */
export const updateSnapshotBody = z.object({
  snapshot: z.object({
    name: z.string().min(1).max(256).optional(),
    expires_at: pointInTime.nullable().optional(),
  }),
});
export type UpdateSnapshotBody = z.infer<typeof updateSnapshotBody>["snapshot"];

export const restoreSnapshotBody = z
  .object({
    name: z.string().min(1).max(256).optional(),
    target_branch_id: id.optional(),
    finalize_restore: z.boolean().optional(),
  })
  .default({});
export type RestoreSnapshotBody = z.infer<typeof restoreSnapshotBody>;

/** The deprecated query form of the restore's `name`. */
export const restoreSnapshotQuery = z.object({ name: z.string().min(1).max(256).optional() });

export const finalizeRestoreBody = z.object({ name: z.string().min(1).max(256).optional() }).default({});

/**
 * `BackupSchedule`. The document lists `hourly` and `yearly` too, but the platform's newer SDK
 * narrows `frequency` to daily, weekly and monthly ("a branch can still hold a schedule created
 * when the API accepted other values") and says a scheduled snapshot is kept 35 days at most,
 * and that a schedule has at least one entry: the stricter reading of each.
 */
export const backupScheduleBody = z.object({
  schedule: z
    .array(
      z
        .object({
          frequency: z.enum(["daily", "weekly", "monthly"]),
          hour: z.number().int().min(0).max(23).optional(),
          day: z.number().int().min(1).max(31).optional(),
          month: z.number().int().min(1).max(12).optional(),
          retention_seconds: z.number().int().min(3600).max(3_024_000).optional(),
        })
        .superRefine((item, ctx) => {
          if (item.month !== undefined) {
            ctx.addIssue({
              code: "custom",
              path: ["month"],
              message: `does not apply to a ${item.frequency} schedule`,
            });
          }
          if (item.frequency === "daily" && item.day !== undefined) {
            ctx.addIssue({ code: "custom", path: ["day"], message: "does not apply to a daily schedule" });
          }
          if (item.frequency !== "daily" && item.day === undefined) {
            ctx.addIssue({
              code: "custom",
              path: ["day"],
              message: `is required for a ${item.frequency} schedule`,
            });
          }
          if (item.frequency === "weekly" && item.day !== undefined && item.day > 7) {
            ctx.addIssue({ code: "custom", path: ["day"], message: "a day of the week is 1..7" });
          }
        }),
    )
    .min(1)
    .refine(
      (items) => new Set(items.map((i) => i.frequency)).size === items.length,
      "at most one entry of each frequency",
    ),
});

export const updateBranchBody = z.object({
  branch: z.object({
    name: z.string().min(1).max(256).optional(),
    protected: z.boolean().optional(),
    expires_at: timestamp.nullable().optional(),
  }),
});
export type UpdateBranchBody = z.infer<typeof updateBranchBody>["branch"];

const postgresName = z.string().min(1);

/** An IP address, a CIDR block (`10.0.0.0/8`) or a range (`10.0.0.1-10.0.0.9`) of one family. */
export function isAllowedIpEntry(entry: string): boolean {
  const cidr = /^([^/]+)\/(\d{1,3})$/.exec(entry);
  if (cidr?.[1] && cidr[2]) {
    const family = isIP(cidr[1]);
    return family !== 0 && Number(cidr[2]) <= (family === 4 ? 32 : 128);
  }
  const range = entry.split("-");
  if (range.length === 2) {
    const [from = "", to = ""] = range;
    return isIP(from) !== 0 && isIP(from) === isIP(to);
  }
  return isIP(entry) !== 0;
}

const time = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be "HH:MM" (UTC)');
const count = z.number().int().min(0);

/** `ProjectSettingsData`; what is not given stays as it is (a key given replaces its value). */
export const projectSettingsBody = z.object({
  quota: z
    .object({
      active_time_seconds: count.optional(),
      compute_time_seconds: count.optional(),
      written_data_bytes: count.optional(),
      data_transfer_bytes: count.optional(),
      logical_size_bytes: count.optional(),
    })
    .optional(),
  allowed_ips: z
    .object({
      ips: z
        .array(z.string().refine(isAllowedIpEntry, "must be an IP address, a CIDR block or a range a-b"))
        .optional(),
      protected_branches_only: z.boolean().optional(),
    })
    .optional(),
  enable_logical_replication: z.boolean().optional(),
  maintenance_window: z
    .object({
      weekdays: z
        .array(z.number().int().min(1).max(7))
        .min(1)
        .refine((days) => new Set(days).size === days.length, "each weekday at most once"),
      start_time: time,
      end_time: time,
    })
    .refine((w) => w.start_time !== w.end_time, "end_time must differ from start_time")
    .optional(),
  block_public_connections: z.boolean().optional(),
  block_vpc_connections: z.boolean().optional(),
  audit_log_level: z.enum(["base", "extended", "full"]).optional(),
  hipaa: z.boolean().optional(),
  preload_libraries: z
    .object({
      use_defaults: z.boolean().optional(),
      enabled_libraries: z.array(z.string().min(1)).optional(),
    })
    .optional(),
});
export type ProjectSettingsBody = z.infer<typeof projectSettingsBody>;

/** `DefaultEndpointSettings` (the deprecated `pgbouncer_settings` is ignored). */
export const defaultEndpointSettingsBody = z.object({
  pg_settings: pgSettings.optional(),
  autoscaling_limit_min_cu: computeUnit.optional(),
  autoscaling_limit_max_cu: computeUnit.optional(),
  suspend_timeout_seconds: suspendTimeout.optional(),
});
export type DefaultEndpointSettingsBody = z.infer<typeof defaultEndpointSettingsBody>;

const historyRetention = z.number().int().min(0).max(2_592_000);

export const createProjectBody = z.object({
  project: z.object({
    name: z.string().min(1).max(256).optional(),
    region_id: z.string().min(1).optional(),
    pg_version: z.number().int().min(14).max(18).optional(),
    org_id: id.optional(),
    history_retention_seconds: historyRetention.optional(),
    store_passwords: z.boolean().optional(),
    provisioner: z.enum(["k8s-pod", "k8s-neonvm", "serverless-platform"]).optional(),
    branch: z
      .object({
        name: z.string().min(1).max(256).optional(),
        role_name: postgresName.optional(),
        database_name: postgresName.optional(),
        annotations: annotationValue.optional(),
      })
      .optional(),
    default_endpoint_settings: defaultEndpointSettingsBody.optional(),
    /** Deprecated aliases of `default_endpoint_settings`' limits. */
    autoscaling_limit_min_cu: computeUnit.optional(),
    autoscaling_limit_max_cu: computeUnit.optional(),
    settings: projectSettingsBody.optional(),
  }),
});
export type CreateProjectBody = z.infer<typeof createProjectBody>["project"];

/** What a project update may change; the fields fixed at creation are refused by name (project-changes.ts). */
export const updateProjectBody = z.object({
  project: z.object({
    name: z.string().min(1).max(256).optional(),
    settings: projectSettingsBody.optional(),
    default_endpoint_settings: defaultEndpointSettingsBody.optional(),
    history_retention_seconds: historyRetention.optional(),
  }),
});
export type UpdateProjectBody = z.infer<typeof updateProjectBody>["project"];

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

/** `OrgApiKeyCreateRequest`: a key of the organization, or of one of its projects only. */
export const createOrgApiKeyBody = createApiKeyBody.extend({ project_id: id.optional() });

/** `GrantPermissionToProjectRequest`. */
export const grantPermissionBody = z.object({ email: z.email().max(256) });

const limit = (max: number) => z.coerce.number().int().min(1).max(max);

export const listProjectsQuery = z.object({
  limit: limit(400).default(10),
  cursor: z.string().optional(),
  search: z.string().optional(),
  org_id: id.optional(),
  /** The document's `TimeoutParam`; no emulated project is slow, so it only has to be valid. */
  timeout: z.coerce.number().int().min(100).max(30_000).optional(),
  recoverable: z.enum(["true", "false"]).optional(),
});
export type ListProjectsQuery = z.infer<typeof listProjectsQuery>;

/** `GET /projects/shared` takes the list's paging and search, and no organization. */
export const listSharedProjectsQuery = listProjectsQuery.pick({
  limit: true,
  cursor: true,
  search: true,
  timeout: true,
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
