// Snapshot: a branch's data kept at a point on the platform (the platform's snapshots), declared in
// Kubernetes: of a Branch (by reference or id), now or at a timestamp or LSN within the branch's
// restore window, named, with an expiry; a Branch can start from one (spec.parent.snapshotRef).
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
import { projectIdField, projectRefField, projectRules } from "./project-ref.ts";

export const SnapshotSpec = z
  .object({
    projectId: projectIdField("snapshot"),
    projectRef: projectRefField("snapshot", {}),
    branchId: platformId
      .optional()
      .describe(
        "The platform branch to take the snapshot of (a root branch). Immutable. Exactly one of branchId and branchRef, unless snapshotId adopts one.",
      )
      .meta(immutable("branchId")),
    branchRef: z
      .object({ name: objectName.describe("Name of a Branch resource in this namespace.") })
      .optional()
      .describe(
        "A Branch resource in this namespace whose branch to take the snapshot of, once it is Ready. Immutable.",
      )
      .meta(immutable("branchRef")),
    at: z
      .object({
        timestamp: z
          .string()
          .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/)
          .optional()
          .describe("The branch as it was at this time (RFC 3339), within its restore window."),
        lsn: z
          .string()
          .regex(/^[0-9A-F]{1,8}\/[0-9A-F]{1,8}$/i)
          .optional()
          .describe("The branch as it was at this write-ahead-log position (for example 0/1F4D3A8)."),
      })
      .optional()
      .describe("The point to keep: at most one of timestamp and lsn. Omitted: now. Immutable.")
      .meta(
        cel(
          { rule: "!(has(self.timestamp) && has(self.lsn))", message: "at takes one of timestamp and lsn" },
          { rule: "self == oldSelf", message: "at is immutable" },
        ),
      ),
    name: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe(
        "The snapshot's name on the platform (a rename is allowed). Default: the resource's owner mark, which finds a snapshot whose create answer was lost.",
      ),
    expiresAt: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/)
      .optional()
      .describe(
        "When the platform deletes the snapshot (RFC 3339). Changing it changes the snapshot's expiry.",
      ),
    ttl: boundedDuration("ttl", "1h")
      .optional()
      .describe(
        "Time to live from the snapshot's creation (a duration such as 168h), computed once. Not with expiresAt.",
      )
      .meta(immutable("ttl")),
    snapshotId: platformId
      .optional()
      .describe("An existing snapshot to adopt instead of taking one. Immutable once set.")
      .meta(immutable("snapshotId")),
    deletionPolicy: z
      .enum(["Delete", "Orphan"])
      .optional()
      .describe(
        "Delete deletes the snapshot with this resource; Orphan keeps it. Omitted: Delete for a snapshot this resource took, Orphan for one it adopted (spec.snapshotId).",
      ),
    sharedWith: sharedWithField("snapshot"),
    credentials: SecretKeyRef.optional(),
  })
  .describe("The desired snapshot.")
  .meta(
    cel(
      ...projectRules,
      {
        rule: "has(self.snapshotId) || (has(self.branchId) != has(self.branchRef))",
        message: "set exactly one of branchId and branchRef (or snapshotId to adopt a snapshot)",
      },
      { rule: "!(has(self.expiresAt) && has(self.ttl))", message: "set at most one of expiresAt and ttl" },
    ),
  );
export type SnapshotSpec = z.infer<typeof SnapshotSpec>;

export const SnapshotStatus = z
  .object({
    snapshotId: z.string().optional().describe("The platform's id of the snapshot."),
    projectId: z.string().optional().describe("The project the snapshot is in."),
    creationName: z
      .string()
      .optional()
      .describe("The name its create was sent with, recorded first: finds it again if the answer was lost."),
    creationStartedAt: z.string().optional().describe("When that create was sent."),
    name: z.string().optional(),
    sourceBranchId: z.string().optional().describe("The branch it keeps the data of."),
    createdAt: z.string().optional(),
    timestamp: z.string().optional().describe("The point in time it keeps."),
    lsn: z.string().optional().describe("The write-ahead-log position it keeps."),
    expiresAt: z.string().optional(),
    fullSize: z.int().optional().describe("Bytes of data it keeps."),
    diffSize: z.int().optional().describe("Bytes it adds to what the branch keeps anyway."),
    operations: z.array(StatusOperation).optional().describe("Operations of the last change."),
    observedGeneration: z.int().optional(),
    conditions: Conditions.optional(),
  })
  .describe("The observed snapshot.");
export type SnapshotStatus = z.infer<typeof SnapshotStatus>;

export const snapshotKind = defineKind({
  kind: "Snapshot",
  plural: "snapshots",
  singular: "snapshot",
  shortNames: ["nsnap"],
  description: "A snapshot of a branch of a serverless Postgres project: its data kept at a point.",
  spec: SnapshotSpec,
  status: SnapshotStatus,
  printerColumns: [
    { name: "Project", type: "string", jsonPath: ".status.projectId" },
    { name: "Branch", type: "string", jsonPath: ".status.sourceBranchId" },
    { name: "Snapshot", type: "string", jsonPath: ".status.snapshotId" },
    { name: "Taken At", type: "string", jsonPath: ".status.timestamp" },
    { name: "Expires", type: "string", jsonPath: ".status.expiresAt", priority: 1 },
    ...readyColumns,
    ageColumn,
  ],
});
