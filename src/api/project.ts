// Project: a project on the platform (its region, Postgres version, settings and defaults),
// declared in Kubernetes. Created, or adopted by spec.projectId; kept when its resource goes
// unless the spec says deletionPolicy: Delete; never replaced.
import { z } from "zod";
import {
  ComputeEndpointSpec,
  ComputeEndpointStatus,
  ComputeUnits,
  ConnectionSecret,
} from "./computeendpoint.ts";
import { Conditions } from "./conditions.ts";
import { SecretKeyRef, boundedDuration, cel, platformId, sharedWithField, type CelRule } from "./fields.ts";
import { ageColumn, defineKind, readyColumns } from "./kind.ts";
import { StatusOperation } from "./operations.ts";

/** Postgres identifiers (role and database names): at most 63 bytes. */
const postgresName = z
  .string()
  .min(1)
  .max(63)
  .meta(cel({ rule: "size(bytes(self)) <= 63", message: "must be at most 63 bytes (a Postgres name)" }));

/** "HH:MM", UTC. */
const time = z.string().regex(/^([01][0-9]|2[0-3]):[0-5][0-9]$/);

/** An address, a CIDR block or a range `a-b`, IPv4 or IPv6. */
const ipEntry = z
  .string()
  .min(2)
  .max(100)
  .regex(/^[0-9a-fA-F:.]+(\/[0-9]{1,3}|-[0-9a-fA-F:.]+)?$/);

const quotaValue = (what: string) => z.int().min(0).optional().describe(`${what}; 0 or omitted: unlimited.`);

export const ProjectSettings = z
  .object({
    allowedIps: z
      .object({
        ips: z
          .array(ipEntry)
          .describe("Addresses, CIDR blocks or ranges (a-b) allowed to connect; empty: every address."),
        protectedBranchesOnly: z
          .boolean()
          .optional()
          .describe("Apply the list only to protected branches. Omitted: left as it is."),
      })
      .optional()
      .describe("The IP allow-list of the project's endpoints."),
    enableLogicalReplication: z
      .boolean()
      .optional()
      .describe(
        "Logical replication (wal_level=logical on every compute). Turning it on suspends the active endpoints; it cannot be turned off again.",
      ),
    maintenanceWindow: z
      .object({
        weekdays: z
          .array(z.int().min(1).max(7))
          .min(1)
          .max(7)
          .meta({ "x-kubernetes-list-type": "set" })
          .describe("Days, 1 (Monday) to 7 (Sunday)."),
        startTime: time.describe('Start, "HH:MM" UTC.'),
        endTime: time.describe('End, "HH:MM" UTC.'),
      })
      .meta(cel({ rule: "self.startTime != self.endTime", message: "endTime must differ from startTime" }))
      .optional()
      .describe("When the platform may restart computes for maintenance."),
    blockPublicConnections: z
      .boolean()
      .optional()
      .describe("Refuse connections from the public internet (supersedes allowedIps)."),
    blockVpcConnections: z.boolean().optional().describe("Refuse connections through VPC endpoints."),
    quota: z
      .object({
        activeTimeSeconds: quotaValue("Wall-clock seconds the computes may be active per billing period"),
        computeTimeSeconds: quotaValue("CPU seconds the computes may use per billing period"),
        writtenDataBytes: quotaValue("Bytes that may be written per billing period"),
        dataTransferBytes: quotaValue("Bytes that may leave through the proxy per billing period"),
        logicalSizeBytes: quotaValue("Largest logical size of each branch"),
      })
      .optional()
      .describe(
        "Consumption quotas: beyond one, the computes are suspended (logicalSizeBytes: writes fail).",
      ),
  })
  .describe(
    "The project's settings. Each one given is kept on the platform (drift repaired); each one left out, and each part of one left out, is not managed and never unset.",
  );
export type ProjectSettings = z.infer<typeof ProjectSettings>;

export const DefaultEndpointSettings = z
  .object({
    computeUnits: ComputeUnits.optional(),
    autosuspend: ComputeEndpointSpec.shape.autosuspend.describe(
      'Inactivity before a new endpoint suspends: 1m to 168h, or "never".',
    ),
    pgSettings: z.record(z.string(), z.string()).optional().describe("Postgres settings of new endpoints."),
  })
  .describe(
    "What the project's new endpoints start with (the default branch's endpoint was made with the settings at the project's creation).",
  );
export type DefaultEndpointSettings = z.infer<typeof DefaultEndpointSettings>;

export const ProjectConnectionSecret = ConnectionSecret.extend({
  name: ConnectionSecret.shape.name.describe(
    "Name of the Secret to write in this namespace; it is owned by this Project and goes with it.",
  ),
  role: ConnectionSecret.shape.role
    .optional()
    .describe(
      "The Postgres role to connect as. Omitted: spec.defaultBranch.roleName, else <database>_owner (the platform's default).",
    ),
  database: ConnectionSecret.shape.database
    .optional()
    .describe(
      "The database. Omitted: spec.defaultBranch.databaseName, else neondb (the platform's default).",
    ),
}).describe(
  "Write a Secret for the default branch's read-write endpoint, with the keys of a ComputeEndpoint's: DATABASE_URL, DATABASE_URL_POOLED, PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE.",
);
export type ProjectConnectionSecret = z.infer<typeof ProjectConnectionSecret>;

/** A field fixed at the project's creation: neither changed, added nor removed afterwards. */
function fixedAtCreation(field: string, why: string): CelRule {
  return {
    rule: `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`,
    message: `${field} is fixed at the project's creation (${why}); a Project is never replaced`,
    fieldPath: `.${field}`,
  };
}

export const ProjectSpec = z
  .object({
    name: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe(
        "The project's name on the platform, kept as given (a rename is a PATCH). Omitted: not managed; a created project is named after this resource's owner mark.",
      ),
    regionId: platformId
      .optional()
      .describe("The region, for example aws-us-east-2. Fixed at creation. Omitted: the platform's default."),
    pgVersion: z
      .int()
      .min(14)
      .max(18)
      .optional()
      .describe("The Postgres major version, 14 to 18. Fixed at creation. Omitted: the platform's default."),
    orgId: platformId
      .optional()
      .describe(
        "The organization that owns the project. Fixed at creation. Needed when the API key is a user's who belongs to organizations.",
      ),
    historyRetention: boundedDuration("historyRetention", "0s", "720h")
      .optional()
      .describe(
        "How far back the history of every branch is kept (point-in-time restore, branching from the past), for example 24h; at most 720h and what the account's plan allows.",
      ),
    defaultEndpointSettings: DefaultEndpointSettings.optional(),
    settings: ProjectSettings.optional(),
    defaultBranch: z
      .object({
        name: z.string().min(1).max(256).optional().describe("The default branch's name. Default: main."),
        roleName: postgresName.optional().describe("The owner role's name. Default: <database>_owner."),
        databaseName: postgresName.optional().describe("The database's name. Default: neondb."),
      })
      .optional()
      .describe(
        "What the default branch, its role and its database are called at creation (a Branch with projectRef.defaultBranch manages the branch afterwards). Fixed at creation.",
      ),
    projectId: platformId
      .optional()
      .describe(
        "An existing project to adopt instead of creating one. Immutable once set. An adopted project is never deleted unless deletionPolicy says Delete.",
      ),
    managementPolicy: z
      .enum(["Manage", "ObserveOnly"])
      .default("Manage")
      .describe(
        "Manage creates and keeps the project as declared; ObserveOnly only reports it (needs projectId).",
      ),
    deletionPolicy: z
      .enum(["Delete", "Orphan"])
      .optional()
      .describe(
        "What deleting this resource does to the project. Omitted: Orphan, the project and its data are kept. Delete deletes the project with every branch, endpoint, role and database in it (the platform can recover it for 7 days).",
      ),
    sharedWith: sharedWithField("project"),
    credentials: SecretKeyRef.optional(),
    connectionSecret: ProjectConnectionSecret.optional(),
    collaborators: z
      .object({
        emails: z
          .array(z.email().max(254))
          .max(100)
          .describe("E-mail addresses of the platform's users the project is shared with."),
        exclusive: z
          .boolean()
          .default(false)
          .describe(
            "The list is the whole of the project's sharing: a grant made elsewhere (the console) is revoked too. Default false: only what this resource granted is taken back when dropped from the list.",
          ),
      })
      .optional()
      .describe(
        "Share the project with users, as the console's project sharing does (collaborators: they work in the project, and do not delete it). Addresses added are granted, addresses dropped are revoked, grants made elsewhere are left alone unless exclusive; a grant revoked elsewhere is granted again.",
      ),
  })
  .describe("The desired project.")
  .meta(
    cel(
      fixedAtCreation("regionId", "the platform does not move a project"),
      fixedAtCreation("pgVersion", "the platform does not upgrade a project in place"),
      fixedAtCreation("orgId", "transfer a project on the platform, then adopt it"),
      fixedAtCreation("defaultBranch", "rename the branch with a Branch resource"),
      {
        rule: "!has(oldSelf.projectId) || (has(self.projectId) && self.projectId == oldSelf.projectId)",
        message: "projectId is immutable once set",
        fieldPath: ".projectId",
      },
      {
        rule: "!has(oldSelf.settings) || !has(oldSelf.settings.enableLogicalReplication) || !oldSelf.settings.enableLogicalReplication || !has(self.settings) || !has(self.settings.enableLogicalReplication) || self.settings.enableLogicalReplication",
        message:
          "settings.enableLogicalReplication cannot be turned off once on: the platform keeps wal_level=logical on the project's computes for good (remove the field to stop managing it)",
        fieldPath: ".settings.enableLogicalReplication",
      },
      {
        rule: "self.managementPolicy != 'ObserveOnly' || has(self.projectId)",
        message: "managementPolicy ObserveOnly needs a projectId to observe",
        fieldPath: ".projectId",
      },
      {
        rule: "!has(self.connectionSecret) || !has(self.credentials) || self.connectionSecret.name != self.credentials.secretName",
        message: "connectionSecret.name must not be the Secret of spec.credentials",
        fieldPath: ".connectionSecret.name",
      },
    ),
  );
export type ProjectSpec = z.infer<typeof ProjectSpec>;

export const ProjectStatus = z
  .object({
    projectId: z.string().optional().describe("The platform's id of the project."),
    name: z.string().optional().describe("The project's name on the platform."),
    regionId: z.string().optional(),
    pgVersion: z.int().optional().describe("The Postgres major version."),
    orgId: z.string().optional(),
    proxyHost: z.string().optional().describe("The project's proxy host (the region's)."),
    historyRetentionSeconds: z.int().optional(),
    collaborators: z
      .array(z.string())
      .optional()
      .describe("The addresses the project is shared with by this resource (spec.collaborators)."),
    defaultBranchId: z
      .string()
      .optional()
      .describe("The default branch (a Branch adopts it with projectRef.defaultBranch)."),
    defaultEndpointId: z
      .string()
      .optional()
      .describe(
        "The default branch's read-write endpoint (a ComputeEndpoint adopts it with projectRef.defaultEndpoint).",
      ),
    defaultEndpointHost: z.string().optional().describe("Its connection host."),
    creationName: z
      .string()
      .optional()
      .describe(
        "The name a create was sent with, recorded before it is sent: a project whose create answer was lost is found again by it (and the owner mark on its default branch), never created twice.",
      ),
    operations: z.array(StatusOperation).optional().describe("Operations of the last change."),
    connectionSecret: ComputeEndpointStatus.shape.connectionSecret,
    observedGeneration: z.int().optional(),
    conditions: Conditions.optional(),
  })
  .describe("The observed project.");
export type ProjectStatus = z.infer<typeof ProjectStatus>;

export const projectKind = defineKind({
  kind: "Project",
  plural: "projects",
  singular: "project",
  shortNames: ["npj"],
  description: "A serverless Postgres project on the platform: its region, version, settings and defaults.",
  spec: ProjectSpec,
  status: ProjectStatus,
  printerColumns: [
    { name: "Project", type: "string", jsonPath: ".status.projectId" },
    { name: "Region", type: "string", jsonPath: ".status.regionId" },
    { name: "PG", type: "integer", jsonPath: ".status.pgVersion", description: "Postgres version." },
    { name: "Host", type: "string", jsonPath: ".status.defaultEndpointHost" },
    ...readyColumns,
    ageColumn,
  ],
});
