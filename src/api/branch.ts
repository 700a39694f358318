// Branch: a branch of a project on the platform, declared in Kubernetes: created from a parent
// (a branch id, a branch name, or another Branch resource), optionally protected and expiring.
import { z } from "zod";
import { Conditions } from "./conditions.ts";
import { StatusOperation } from "./operations.ts";
import { restoredFromParentAtAnnotation } from "./group.ts";
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

/** The platform's branch names: 1 to 256 characters (`BranchCreateRequest.branch.name`). */
const branchName = z.string().min(1).max(256);

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export const BranchParent = z
  .object({
    branchId: platformId.optional().describe("The parent's platform branch id."),
    branchName: branchName.optional().describe("The parent's branch name in the project."),
    branchRef: z
      .object({ name: objectName.describe("Name of a Branch resource in this namespace.") })
      .optional()
      .describe("Another Branch resource in this namespace; this one waits until it is Ready."),
    snapshotId: platformId
      .optional()
      .describe(
        "A snapshot of the project to start from (its data as the snapshot kept it), by its platform id.",
      ),
    snapshotRef: z
      .object({ name: objectName.describe("Name of a Snapshot resource in this namespace.") })
      .optional()
      .describe("A Snapshot resource in this namespace to start from; this one waits until it is Ready."),
    timestamp: z
      .string()
      .regex(rfc3339)
      .optional()
      .describe(
        "The parent as it was at this time (RFC 3339), within its restore window (the project's history retention).",
      ),
    lsn: z
      .string()
      .regex(/^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/i)
      .optional()
      .describe(
        "The parent as it was at this write-ahead-log position (for example 0/1F4D3A8), within its restore window.",
      ),
  })
  .describe(
    "What to create from: a branch (exactly one of branchId, branchName or branchRef; as it is now, or at a timestamp or lsn) or a snapshot (snapshotId or snapshotRef). Omitted: the project's default branch as it is now. Immutable.",
  )
  .meta(
    cel(
      {
        rule: "[has(self.branchId), has(self.branchName), has(self.branchRef), has(self.snapshotId), has(self.snapshotRef)].filter(x, x).size() == 1",
        message: "parent needs exactly one of branchId, branchName, branchRef, snapshotId or snapshotRef",
      },
      {
        rule: "!(has(self.timestamp) && has(self.lsn))",
        message: "parent takes one of timestamp and lsn",
      },
      {
        rule: "!(has(self.snapshotId) || has(self.snapshotRef)) || !(has(self.timestamp) || has(self.lsn))",
        message: "a snapshot keeps its own point: timestamp and lsn go with a parent branch",
      },
      { rule: "self == oldSelf", message: "parent is immutable" },
    ),
  );
export type BranchParent = z.infer<typeof BranchParent>;

/** Postgres identifiers: at most 63 bytes (NAMEDATALEN - 1); the platform refuses longer ones. */
const postgresName = z
  .string()
  .min(1)
  .max(63)
  .meta(cel({ rule: "size(bytes(self)) <= 63", message: "must be at most 63 bytes (a Postgres name)" }));

export const BranchRole = z
  .object({ name: postgresName.describe("The role's name (a Postgres identifier).") })
  .describe("A Postgres role the branch must have (created with a generated password).");
export type BranchRole = z.infer<typeof BranchRole>;

export const BranchDatabase = z
  .object({
    name: postgresName.describe("The database's name."),
    owner: postgresName.describe(
      "The role that owns it: one of spec.roles, or a role the branch already has (from its parent).",
    ),
  })
  .describe("A database the branch must have.");
export type BranchDatabase = z.infer<typeof BranchDatabase>;

/** One masking rule: a column and the masking function or value applied to it. */
export const MaskingRule = z
  .object({
    database: postgresName.describe("The database the column is in."),
    schema: postgresName.default("public").describe("The schema the table is in. Default public."),
    table: postgresName.describe("The table."),
    column: postgresName.describe("The column."),
    function: z
      .string()
      .min(1)
      .max(1024)
      .optional()
      .describe(
        "A PostgreSQL Anonymizer function, for example anon.fake_email() or anon.partial(phone, 2, '***', 2).",
      ),
    value: z
      .string()
      .max(1024)
      .optional()
      .describe("An SQL literal the column takes instead ('REDACTED', 0, NULL)."),
  })
  .describe("Exactly one of function and value.")
  .meta(
    cel({ rule: "has(self.function) != has(self.value)", message: "set exactly one of function and value" }),
  );
export type MaskingRule = z.infer<typeof MaskingRule>;

/** One entry of a backup schedule (the platform's `BackupScheduleItem`). */
export const BackupScheduleItem = z
  .object({
    frequency: z.enum(["daily", "weekly", "monthly"]).describe("How often a snapshot is taken."),
    hour: z.int().min(0).max(23).optional().describe("The hour (UTC) it is taken."),
    day: z
      .int()
      .min(1)
      .max(31)
      .optional()
      .describe(
        "The day of the week (1-7, Monday first) of a weekly one, of the month (1-31) of a monthly one.",
      ),
    retention: boundedDuration("retention", "1h", "840h")
      .optional()
      .describe("How long each snapshot is kept: 1h to 840h (35 days)."),
  })
  .describe("A snapshot taken on a schedule.")
  .meta(
    cel(
      { rule: "self.frequency != 'daily' || !has(self.day)", message: "a daily snapshot takes no day" },
      {
        rule: "self.frequency == 'daily' || has(self.day)",
        message: "a weekly or monthly snapshot needs a day",
      },
      { rule: "self.frequency != 'weekly' || self.day <= 7", message: "a day of the week is 1 to 7" },
    ),
  );
export type BackupScheduleItem = z.infer<typeof BackupScheduleItem>;

/** A list keyed by name: the API server refuses two entries of one name. */
const byName = { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] } as const;

export const BranchSpec = z
  .object({
    projectId: projectIdField("branch"),
    projectRef: projectRefField("branch", { defaultBranch: adoptDefault("default branch") }),
    parent: BranchParent.optional(),
    name: branchName
      .optional()
      .describe(
        "The branch's name on the platform (the platform allows a rename). Default: k8s-<uid of this resource>, so a branch whose create answer was lost is found again.",
      ),
    protected: z
      .boolean()
      .optional()
      .describe("Protect the branch (the platform then refuses to delete it). Omitted: left as it is."),
    expiresAt: z.iso
      .datetime({ offset: true })
      .optional()
      .describe(
        "When the platform deletes the branch (RFC 3339, in the future). Changing it moves the expiry; it may replace a ttl.",
      ),
    ttl: boundedDuration("ttl", "1s")
      .optional()
      .describe(
        "Time to live from the branch's creation (a duration such as 72h): expires_at is computed once, when the branch is created, and kept in status. Its value cannot change; to move the expiry, replace ttl by expiresAt.",
      )
      .meta(immutable("ttl")),
    deletionPolicy: z
      .enum(["Delete", "Orphan"])
      .optional()
      .describe(
        "Delete removes the platform branch (and its endpoints) with this resource; Orphan leaves it. Omitted: Delete for a branch this resource created, Orphan for one it adopted (spec.branchId): an adopted branch is deleted only when the spec says Delete.",
      ),
    sharedWith: sharedWithField("branch"),
    roles: z
      .array(BranchRole)
      .max(50)
      .optional()
      .meta(byName)
      .describe(
        "Roles the branch must have: created when missing, never deleted by the operator (removing one from the list leaves it on the branch).",
      ),
    databases: z
      .array(BranchDatabase)
      .max(50)
      .optional()
      .meta(byName)
      .describe(
        "Databases the branch must have: created when missing, never deleted by the operator. The owner must be a role the branch has.",
      ),
    branchId: platformId
      .optional()
      .describe("An existing branch to adopt instead of creating one. Immutable once set."),
    initSource: z
      .enum(["parent-data", "schema-only"])
      .optional()
      .describe(
        "schema-only: the parent's schema (tables, indexes, constraints) without a row, as a new root branch. Default: the parent's data. Immutable.",
      )
      .meta(immutable("initSource")),
    masking: z
      .object({
        rules: z
          .array(MaskingRule)
          .min(1)
          .max(500)
          .describe("Columns whose values the platform masks in this branch's data (PostgreSQL Anonymizer)."),
      })
      .optional()
      .describe(
        "A masked copy of the parent: the branch is made with these rules applied to its data (the platform's anonymized branches); a change of the rules applies them again to the branch's data. Immutable once set, but for its rules.",
      ),
    backupSchedule: z
      .array(BackupScheduleItem)
      .max(20)
      .optional()
      .describe(
        "When the platform takes snapshots of this branch (a root branch), and how long it keeps them: kept as declared, drift repaired. Omitted: left as it is.",
      ),
    credentials: SecretKeyRef.optional(),
  })
  .describe("The desired branch.")
  .meta(
    cel(
      ...projectRules,
      {
        rule: "!has(self.projectRef) || !self.projectRef.defaultBranch || (!has(self.parent) && !has(self.branchId))",
        message:
          "projectRef.defaultBranch adopts the project's default branch: it takes no parent and no branchId",
        fieldPath: ".projectRef.defaultBranch",
      },
      {
        rule: "!(has(self.expiresAt) && has(self.ttl))",
        message: "set expiresAt or ttl, not both",
      },
      {
        rule: "has(self.parent) == has(oldSelf.parent)",
        message: "parent is immutable",
        fieldPath: ".parent",
      },
      // An expiry that can move: ttl (counted from the creation, once) may be replaced by
      // expiresAt, which then moves the branch's expiry (the Branch controller PATCHes it); ttl
      // is never added later (it counts from the creation) nor removed alone.
      {
        rule: "!has(self.ttl) || has(oldSelf.ttl)",
        message: "ttl cannot be added after creation (it counts from the creation): set expiresAt instead",
        fieldPath: ".ttl",
      },
      {
        rule: "!has(oldSelf.ttl) || has(self.ttl) || has(self.expiresAt)",
        message: "ttl can only be replaced by expiresAt (which then moves the expiry), not removed alone",
        fieldPath: ".ttl",
      },
      {
        rule: "!has(oldSelf.branchId) || (has(self.branchId) && self.branchId == oldSelf.branchId)",
        message: "branchId is immutable once set",
        fieldPath: ".branchId",
      },
    ),
  );
export type BranchSpec = z.infer<typeof BranchSpec>;

export const BranchStatus = z
  .object({
    projectId: z
      .string()
      .optional()
      .describe("The project the branch is in (a projectRef resolved), from the first attempt on."),
    branchId: z.string().optional().describe("The platform's id of the branch."),
    name: z.string().optional().describe("The branch's name on the platform."),
    parentId: z.string().optional().describe("The parent's branch id."),
    parentLsn: z.string().optional().describe("The LSN of the parent the branch was created from."),
    parentTimestamp: z.string().optional().describe("The point in time of the parent it was created from."),
    currentState: z.string().optional().describe("init, resetting, ready or archived."),
    pendingState: z.string().optional().describe("The state a change under way leads to."),
    protected: z.boolean().optional(),
    default: z.boolean().optional().describe("The project's default branch."),
    createdAt: z.string().optional(),
    expiresAt: z
      .string()
      .optional()
      .describe("When the platform deletes the branch; with spec.ttl, computed once at creation."),
    updatedAt: z.string().optional().describe("When the platform last changed the branch."),
    lastResetAt: z.string().optional().describe("When the branch was last reset or restored."),
    roles: z
      .array(z.string())
      .optional()
      .describe("The roles of spec.roles the branch has, as last seen (other roles are not listed)."),
    databases: z
      .array(z.object({ name: z.string(), owner: z.string() }))
      .optional()
      .describe("The databases of spec.databases the branch has, with their owners, as last seen."),
    restoredFromParentAt: z
      .string()
      .optional()
      .describe(
        `The value of the ${restoredFromParentAtAnnotation} annotation last acted upon (the branch was reset from its parent for it).`,
      ),
    logicalSize: z.int().optional().describe("The branch's logical size in bytes."),
    masking: z
      .object({
        state: z.string().describe("The platform's anonymization state: anonymizing, anonymized, error, ..."),
        message: z.string().optional(),
        maskedColumns: z.int().optional().describe("Columns the last run masked."),
        appliedRules: z
          .string()
          .optional()
          .describe("A digest of the rules last applied to the branch's data."),
      })
      .optional()
      .describe("The masking of the branch's data (spec.masking)."),
    endpoint: z
      .object({ name: z.string(), uid: z.string() })
      .optional()
      .describe(
        "The ComputeEndpoint of this namespace (name and UID) whose read-write endpoint the branch's create made in the same request (docs/branch.md): only that resource takes the endpoint over as its own.",
      ),
    operations: z.array(StatusOperation).optional().describe("Operations of the last change."),
    observedGeneration: z.int().optional(),
    conditions: Conditions.optional(),
  })
  .describe("The observed branch.");
export type BranchStatus = z.infer<typeof BranchStatus>;

export const branchKind = defineKind({
  kind: "Branch",
  plural: "branches",
  singular: "branch",
  shortNames: ["nbr"],
  description: "A branch of a serverless Postgres project on the platform.",
  spec: BranchSpec,
  status: BranchStatus,
  printerColumns: [
    // Resolved, so a projectRef shows its project too.
    { name: "Project", type: "string", jsonPath: ".status.projectId" },
    { name: "Branch", type: "string", jsonPath: ".status.branchId" },
    { name: "Name", type: "string", jsonPath: ".status.name" },
    { name: "State", type: "string", jsonPath: ".status.currentState" },
    { name: "Parent", type: "string", jsonPath: ".status.parentId", priority: 1 },
    { name: "Expires", type: "string", jsonPath: ".status.expiresAt", priority: 1 },
    ...readyColumns,
    ageColumn,
  ],
});
