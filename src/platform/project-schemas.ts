/**
 * The platform's project objects (snake_case wire, camelCase for the operator), after the official
 * OpenAPI document's `Project`, `ProjectListItem`, `ProjectCreateRequest`, `ProjectUpdateRequest`,
 * `ProjectSettingsData` and `DefaultEndpointSettings` (`public-v2-for-users.gen.yaml`). Required
 * here: what both the list item and the project require and the operator relies on; usage figures,
 * owner and the deprecated fields are tolerated, not needed. The create answer's roles and
 * connection URIs carry the owner role's password: they are never parsed, so never kept.
 */
import { z } from "zod";
import { branchWire } from "./branch-schemas.ts";
import { endpointWire, operationWire } from "./schemas.ts";

const timestamp = z.string();
const count = z.number().int().optional();

/** The project's settings the operator manages (camelCase of `ProjectSettingsData`). */
export interface ProjectSettings {
  quota?: {
    activeTimeSeconds?: number | undefined;
    computeTimeSeconds?: number | undefined;
    writtenDataBytes?: number | undefined;
    dataTransferBytes?: number | undefined;
    logicalSizeBytes?: number | undefined;
  };
  allowedIps?: { ips?: string[] | undefined; protectedBranchesOnly?: boolean | undefined };
  enableLogicalReplication?: boolean | undefined;
  maintenanceWindow?: { weekdays: number[]; startTime: string; endTime: string };
  blockPublicConnections?: boolean | undefined;
  blockVpcConnections?: boolean | undefined;
}

/** What new endpoints of the project start with (`DefaultEndpointSettings`). */
export interface DefaultEndpointSettings {
  autoscalingLimitMinCu?: number | undefined;
  autoscalingLimitMaxCu?: number | undefined;
  suspendTimeoutSeconds?: number | undefined;
  pgSettings?: Record<string, string> | undefined;
}

const settingsWire = z
  .object({
    quota: z
      .object({
        active_time_seconds: count,
        compute_time_seconds: count,
        written_data_bytes: count,
        data_transfer_bytes: count,
        logical_size_bytes: count,
      })
      .optional(),
    allowed_ips: z
      .object({ ips: z.array(z.string()).optional(), protected_branches_only: z.boolean().optional() })
      .optional(),
    enable_logical_replication: z.boolean().optional(),
    maintenance_window: z
      .object({ weekdays: z.array(z.number().int()), start_time: z.string(), end_time: z.string() })
      .optional(),
    block_public_connections: z.boolean().optional(),
    block_vpc_connections: z.boolean().optional(),
  })
  .transform((s): ProjectSettings => ({
    quota: s.quota && {
      activeTimeSeconds: s.quota.active_time_seconds,
      computeTimeSeconds: s.quota.compute_time_seconds,
      writtenDataBytes: s.quota.written_data_bytes,
      dataTransferBytes: s.quota.data_transfer_bytes,
      logicalSizeBytes: s.quota.logical_size_bytes,
    },
    allowedIps: s.allowed_ips && {
      ips: s.allowed_ips.ips,
      protectedBranchesOnly: s.allowed_ips.protected_branches_only,
    },
    enableLogicalReplication: s.enable_logical_replication,
    maintenanceWindow: s.maintenance_window && {
      weekdays: s.maintenance_window.weekdays,
      startTime: s.maintenance_window.start_time,
      endTime: s.maintenance_window.end_time,
    },
    blockPublicConnections: s.block_public_connections,
    blockVpcConnections: s.block_vpc_connections,
  }));

const defaultEndpointSettingsWire = z
  .object({
    autoscaling_limit_min_cu: z.number().optional(),
    autoscaling_limit_max_cu: z.number().optional(),
    suspend_timeout_seconds: z.number().int().optional(),
    pg_settings: z.record(z.string(), z.string()).optional(),
  })
  .transform((d): DefaultEndpointSettings => ({
    autoscalingLimitMinCu: d.autoscaling_limit_min_cu,
    autoscalingLimitMaxCu: d.autoscaling_limit_max_cu,
    suspendTimeoutSeconds: d.suspend_timeout_seconds,
    pgSettings: d.pg_settings,
  }));

export const projectWire = z
  .object({
    id: z.string(),
    name: z.string(),
    region_id: z.string(),
    pg_version: z.number().int(),
    proxy_host: z.string(),
    org_id: z.string().optional(),
    // Required of a project, optional in a list item.
    history_retention_seconds: z.number().int().optional(),
    store_passwords: z.boolean(),
    settings: settingsWire.optional(),
    default_endpoint_settings: defaultEndpointSettingsWire.optional(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .transform((p) => ({
    id: p.id,
    name: p.name,
    regionId: p.region_id,
    pgVersion: p.pg_version,
    proxyHost: p.proxy_host,
    orgId: p.org_id,
    historyRetentionSeconds: p.history_retention_seconds,
    storePasswords: p.store_passwords,
    settings: p.settings ?? {},
    defaultEndpointSettings: p.default_endpoint_settings ?? {},
    createdAt: p.created_at,
    updatedAt: p.updated_at,
  }));

export type Project = z.output<typeof projectWire>;

/**
 * `POST /projects` (201): the project, its default branch and endpoint, the operations started,
 * and the owner role's connection URIs with its password (kept by the client for the first read,
 * never handed on: `ProjectCreated` has no password).
 */
export const projectCreatedWire = z
  .object({
    project: projectWire,
    branch: branchWire,
    endpoints: z.array(endpointWire),
    operations: z.array(operationWire),
    connection_uris: z
      .array(
        z.object({
          connection_uri: z.string(),
          connection_parameters: z.object({ role: z.string(), database: z.string() }),
        }),
      )
      .default([]),
  })
  .transform(({ connection_uris, ...created }) => ({
    ...created,
    connectionUris: connection_uris.map((u) => ({
      uri: u.connection_uri,
      role: u.connection_parameters.role,
      database: u.connection_parameters.database,
    })),
  }));

/** A create's answer as the client hands it on: without the password its URIs carry. */
export type ProjectCreated = Omit<z.output<typeof projectCreatedWire>, "connectionUris">;

export const projectResponseWire = z.object({ project: projectWire });

/** `PATCH /projects/{project_id}`: the project and the operations the change started (maybe none). */
export const projectMutationWire = z.object({ project: projectWire, operations: z.array(operationWire) });

export type ProjectMutation = z.output<typeof projectMutationWire>;

/** `DELETE /projects/{project_id}` answers the project alone: a deletion starts nothing to wait for. */
export const projectDeletedWire = projectResponseWire.transform((r) => ({
  project: r.project,
  operations: [] as z.output<typeof operationWire>[],
}));

/** One page of `GET /projects`; the cursor of the next page is the last project id. */
export const projectsPageWire = z.object({
  projects: z.array(projectWire),
  pagination: z.object({ cursor: z.string().optional() }).optional(),
});

/** What may change on a project (`ProjectUpdateRequest.project`). */
export interface ProjectPatch {
  name?: string;
  historyRetentionSeconds?: number;
  defaultEndpointSettings?: DefaultEndpointSettings;
  settings?: ProjectSettings;
}

/** A new project (`ProjectCreateRequest.project`): the patch's fields and what is fixed at creation. */
export interface ProjectCreateSpec extends ProjectPatch {
  regionId?: string;
  pgVersion?: number;
  orgId?: string;
  /** The default branch's name, role and database, and its annotations (the operator's owner mark). */
  branch?: {
    name?: string;
    roleName?: string;
    databaseName?: string;
    annotations?: Record<string, string>;
  };
}

/** An object without the keys whose value is undefined (the platform's "not given"). */
function given(wire: Record<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(wire)) if (wire[key] === undefined) delete wire[key];
  return wire;
}

function settingsBody(s: ProjectSettings): Record<string, unknown> {
  return given({
    quota: s.quota && {
      ...given({
        active_time_seconds: s.quota.activeTimeSeconds,
        compute_time_seconds: s.quota.computeTimeSeconds,
        written_data_bytes: s.quota.writtenDataBytes,
        data_transfer_bytes: s.quota.dataTransferBytes,
        logical_size_bytes: s.quota.logicalSizeBytes,
      }),
    },
    allowed_ips: s.allowedIps && {
      ...given({ ips: s.allowedIps.ips, protected_branches_only: s.allowedIps.protectedBranchesOnly }),
    },
    enable_logical_replication: s.enableLogicalReplication,
    maintenance_window: s.maintenanceWindow && {
      weekdays: s.maintenanceWindow.weekdays,
      start_time: s.maintenanceWindow.startTime,
      end_time: s.maintenanceWindow.endTime,
    },
    block_public_connections: s.blockPublicConnections,
    block_vpc_connections: s.blockVpcConnections,
  });
}

/** The platform's `{"project": {...}}` body of a create or an update, leaving out what is not given. */
export function projectBody(spec: ProjectCreateSpec): { project: Record<string, unknown> } {
  const d = spec.defaultEndpointSettings;
  const b = spec.branch;
  return {
    project: given({
      name: spec.name,
      region_id: spec.regionId,
      pg_version: spec.pgVersion,
      org_id: spec.orgId,
      history_retention_seconds: spec.historyRetentionSeconds,
      branch:
        b &&
        given({
          name: b.name,
          role_name: b.roleName,
          database_name: b.databaseName,
          annotations: b.annotations,
        }),
      default_endpoint_settings: d && {
        ...given({
          autoscaling_limit_min_cu: d.autoscalingLimitMinCu,
          autoscaling_limit_max_cu: d.autoscalingLimitMaxCu,
          suspend_timeout_seconds: d.suspendTimeoutSeconds,
          pg_settings: d.pgSettings,
        }),
      },
      settings: spec.settings && settingsBody(spec.settings),
    }),
  };
}

/** What `GET /projects` is asked: a search on names and ids, an organization, a page. */
export interface ProjectsQuery {
  search?: string;
  orgId?: string;
}
