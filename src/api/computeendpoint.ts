// ComputeEndpoint: a compute endpoint of a branch on the platform, declared in Kubernetes.
import { z } from "zod";
import { Conditions } from "./conditions.ts";
import { StatusOperation } from "./operations.ts";
import { ageColumn, defineKind, readyColumns } from "./kind.ts";
import {
  SecretKeyRef,
  boundedDuration,
  cel,
  immutable,
  objectName,
  platformId,
  sharedWithField,
} from "./fields.ts";
import { adoptDefault, projectIdField, projectRefField, projectRules } from "./project-ref.ts";

/** Compute sizes the platform offers, in compute units (1 CU = 1 vCPU, 4 GB RAM). */
export const computeSizes: readonly number[] = [
  0.25,
  0.5,
  ...Array.from({ length: 16 }, (_, i) => i + 1),
  ...Array.from({ length: 20 }, (_, i) => 18 + 2 * i),
];
/** Largest size an autoscaling range may reach, and its widest span. */
export const maxAutoscalingCu = 16;
export const maxAutoscalingSpanCu = 8;

const sizeList = `[${computeSizes.map((s) => (Number.isInteger(s) ? `${s}.0` : `${s}`)).join(", ")}]`;
const sizeWords = "0.25, 0.5, a whole number from 1 to 16, or an even number from 18 to 56";

export const ComputeUnits = z
  .object({
    min: z.number().describe(`Minimum compute size in CU: ${sizeWords}.`),
    max: z
      .number()
      .optional()
      .describe("Maximum compute size in CU; omitted or equal to min for a fixed size."),
  })
  .describe(
    "Compute size in compute units (CU). A fixed size sets min only (or min = max); an autoscaling range sets min < max. Changing it restarts the endpoint.",
  )
  .meta(
    cel(
      {
        rule: `self.min in ${sizeList}`,
        message: `computeUnits.min must be ${sizeWords}`,
        fieldPath: ".min",
      },
      {
        rule: `!has(self.max) || self.max in ${sizeList}`,
        message: `computeUnits.max must be ${sizeWords}`,
        fieldPath: ".max",
      },
      {
        rule: "!has(self.max) || self.min <= self.max",
        message: "computeUnits.min must be less than or equal to computeUnits.max",
      },
      {
        rule: `!has(self.max) || self.min == self.max || self.max <= ${maxAutoscalingCu}.0`,
        message: `an autoscaling range (min < max) must stay within ${maxAutoscalingCu} CU; larger sizes are fixed only`,
      },
      {
        rule: `!has(self.max) || self.max - self.min <= ${maxAutoscalingSpanCu}.0`,
        message: `computeUnits.max - computeUnits.min must be at most ${maxAutoscalingSpanCu} CU`,
      },
    ),
  );
export type ComputeUnits = z.infer<typeof ComputeUnits>;

/** A Postgres identifier (role or database name): at most 63 bytes, as Postgres truncates longer ones. */
const pgIdentifier = (what: string) =>
  z
    .string()
    .min(1)
    .max(63)
    .refine((v) => Buffer.byteLength(v, "utf8") <= 63 && !v.includes("\0"), {
      message: `${what} must be at most 63 bytes with no NUL character`,
    });

export const ConnectionSecret = z
  .object({
    name: objectName.describe(
      "Name of the Secret to write in this namespace; it is owned by this ComputeEndpoint and goes with it.",
    ),
    role: pgIdentifier("connectionSecret.role").describe(
      "The Postgres role (user) to connect as, for example neondb_owner.",
    ),
    database: pgIdentifier("connectionSecret.database").describe(
      "The database to connect to, for example neondb.",
    ),
    allowPasswordReset: z
      .boolean()
      .default(false)
      .describe(
        "Consent to reset the role's password when the project does not store passwords (the only way to get one then). A reset drops the role's live connections. Without it such a resource reports PasswordNotStored.",
      ),
  })
  .describe(
    "Write a Secret with the connection settings for a role and database: DATABASE_URL, DATABASE_URL_POOLED, PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE.",
  );
export type ConnectionSecret = z.infer<typeof ConnectionSecret>;

export const ComputeEndpointSpec = z
  .object({
    projectId: projectIdField("endpoint"),
    projectRef: projectRefField("endpoint", {
      defaultEndpoint: adoptDefault("default branch's read-write endpoint"),
    }),
    branchId: platformId
      .optional()
      .describe(
        "The branch the endpoint is attached to. Changing it moves the endpoint to the other branch. Exactly one of branchId and branchRef, unless projectRef.defaultEndpoint names the endpoint (and so its branch).",
      ),
    branchRef: z
      .object({ name: objectName.describe("Name of a Branch resource in this namespace.") })
      .optional()
      .describe(
        "A Branch resource in this namespace whose branch the endpoint is attached to, once that Branch is Ready (until then the endpoint waits: WaitingForReference). Exactly one of branchId and branchRef.",
      ),
    type: z
      .enum(["read_write", "read_only"])
      .default("read_write")
      .describe("read_write (one per branch) or read_only (a read replica). Immutable.")
      .meta(immutable("type")),
    computeUnits: ComputeUnits.optional(),
    autosuspend: z
      .union([z.literal("never"), boundedDuration("autosuspend", "60s", "168h")])
      .optional()
      .describe(
        'Inactivity before the endpoint suspends: a duration from 1m to 168h (7 days), or "never". Omitted: the platform default (5m).',
      ),
    pooler: z
      .object({
        enabled: z.boolean().describe("Serve a pooled connection host."),
        mode: z
          .enum(["transaction"])
          .default("transaction")
          .describe("Pooling mode; the platform offers transaction."),
      })
      .optional()
      .describe("Connection pooler settings."),
    pgSettings: z
      .record(z.string(), z.string())
      .optional()
      .describe("Postgres settings applied to the endpoint."),
    disabled: z.boolean().optional().describe("A disabled endpoint refuses connections."),
    suspended: z
      .boolean()
      .optional()
      .describe("Desired run state: true suspends the endpoint and keeps it suspended; false starts it."),
    credentials: SecretKeyRef.optional(),
    deletionPolicy: z
      .enum(["Delete", "Orphan"])
      .optional()
      .describe(
        "Delete removes the platform endpoint with this resource; Orphan leaves it running. Omitted: Delete for an endpoint this resource created, Orphan for one it adopted (spec.endpointId): an adopted endpoint is deleted only when the spec says Delete.",
      ),
    sharedWith: sharedWithField("endpoint"),
    endpointId: platformId
      .optional()
      .describe("An existing endpoint to adopt instead of creating one. Immutable once set."),
    managementPolicy: z
      .enum(["Manage", "ObserveOnly"])
      .default("Manage")
      .describe("Manage creates, updates and deletes; ObserveOnly only reports the endpoint's state."),
    connectionConfigMapName: objectName
      .optional()
      .describe("Publish connection details (host, pooled host, port, ids, sslmode) to this ConfigMap."),
    connectionSecret: ConnectionSecret.optional(),
  })
  .describe("The desired endpoint.")
  .meta(
    cel(
      ...projectRules,
      {
        rule: "!has(oldSelf.endpointId) || (has(self.endpointId) && self.endpointId == oldSelf.endpointId)",
        message: "endpointId is immutable once set",
        fieldPath: ".endpointId",
      },
      {
        rule: "has(self.projectRef) && self.projectRef.defaultEndpoint ? !has(self.branchId) && !has(self.branchRef) && !has(self.endpointId) && self.type == 'read_write' : has(self.branchId) != has(self.branchRef)",
        message:
          "set exactly one of branchId and branchRef; with projectRef.defaultEndpoint (the default branch's read-write endpoint) none of branchId, branchRef and endpointId, and type read_write",
      },
      {
        rule: "!has(self.connectionSecret) || !has(self.credentials) || self.connectionSecret.name != self.credentials.secretName",
        message: "connectionSecret.name must not be the Secret of spec.credentials",
        fieldPath: ".connectionSecret.name",
      },
      {
        rule: "self.managementPolicy != 'ObserveOnly' || has(self.endpointId) || (has(self.projectRef) && self.projectRef.defaultEndpoint)",
        message:
          "managementPolicy ObserveOnly needs an endpointId (or projectRef.defaultEndpoint) to observe",
        fieldPath: ".endpointId",
      },
    ),
  );
export type ComputeEndpointSpec = z.infer<typeof ComputeEndpointSpec>;
/** The spec with its branch resolved (a branchRef read as the Branch's id). */
export type ResolvedComputeEndpointSpec = ComputeEndpointSpec & { branchId: string };

export const ComputeEndpointStatus = z
  .object({
    endpointId: z.string().optional().describe("The platform's id of the endpoint."),
    projectId: z
      .string()
      .optional()
      .describe("The project the endpoint is in (a projectRef resolved), from the first attempt on."),
    creationName: z
      .string()
      .optional()
      .describe(
        "The name given to the endpoint on creation; finds it again if the create response was lost.",
      ),
    host: z.string().optional().describe("Connection host."),
    pooledHost: z.string().optional().describe("Connection host through the pooler."),
    proxyHost: z.string().optional(),
    regionId: z.string().optional(),
    branchId: z
      .string()
      .optional()
      .describe("The branch the endpoint is attached to now; before it has one, the branch the spec names."),
    currentState: z.string().optional().describe("init, active or idle."),
    pendingState: z.string().optional().describe("The state a change under way leads to."),
    lastActive: z.string().optional(),
    computeUnits: z
      .object({ min: z.number(), max: z.number() })
      .optional()
      .describe("Effective compute size."),
    maxConnections: z.int().optional().describe("max_connections implied by the minimum compute size."),
    operations: z.array(StatusOperation).optional().describe("Operations of the last change."),
    restartedAt: z.string().optional().describe("The restartedAt annotation value last acted upon."),
    connectionSecret: z
      .object({
        name: z.string().optional().describe("The Secret last written."),
        role: z.string().optional(),
        database: z.string().optional(),
        passwordRotatedAt: z
          .string()
          .optional()
          .describe("The rotatePasswordAt annotation value last acted upon."),
        passwordReset: z
          .string()
          .optional()
          .describe(
            "Why a password reset was sent whose new password is not in the Secret yet (Rotation or NotStored); cleared once it is.",
          ),
        address: z
          .object({
            host: z.string(),
            port: z.int(),
            pooledHost: z.string(),
            pooledPort: z.int(),
            sslmode: z.string(),
          })
          .optional()
          .describe(
            "Where the Secret says to connect (the platform's connection answer); the ConfigMap says the same.",
          ),
      })
      .optional()
      .describe("The connection Secret (never the password)."),
    suspended: z
      .boolean()
      .optional()
      .describe("The desired run state last applied; false after true starts the endpoint once."),
    observedGeneration: z.int().optional(),
    conditions: Conditions.optional(),
  })
  .describe("The observed endpoint.");
export type ComputeEndpointStatus = z.infer<typeof ComputeEndpointStatus>;

export const computeEndpointKind = defineKind({
  kind: "ComputeEndpoint",
  plural: "computeendpoints",
  singular: "computeendpoint",
  shortNames: ["cep"],
  description: "A compute endpoint of a branch of a serverless Postgres project on the platform.",
  spec: ComputeEndpointSpec,
  status: ComputeEndpointStatus,
  printerColumns: [
    // Resolved, so a projectRef shows its project too.
    { name: "Project", type: "string", jsonPath: ".status.projectId" },
    // The branch the endpoint is on, as the platform reports it: a branchRef is resolved, and a
    // refused move shows where it still is, not where the spec wants it.
    {
      name: "Branch",
      type: "string",
      jsonPath: ".status.branchId",
      description: "The branch the endpoint is on now.",
    },
    { name: "Type", type: "string", jsonPath: ".spec.type" },
    { name: "State", type: "string", jsonPath: ".status.currentState" },
    { name: "Host", type: "string", jsonPath: ".status.host" },
    ...readyColumns,
    ageColumn,
  ],
});
