/**
 * The platform's snapshots and backup schedules (snake_case wire, camelCase for the operator),
 * after the official OpenAPI document's `Snapshot`, `SnapshotUpdateRequest`, `BackupSchedule`
 * and their responses (`public-v2-for-users.gen.yaml`). Not the list cache of snapshot.ts: a
 * snapshot here is a branch's data kept at a point.
 */
import { z } from "zod";
import { operationWire, type Operation } from "./schemas.ts";

const timestamp = z.string();

export const snapshotWire = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string().optional(),
    lsn: z.string().optional(),
    timestamp: timestamp.optional(),
    source_branch_id: z.string().optional(),
    created_at: timestamp,
    expires_at: timestamp.optional(),
    manual: z.boolean().optional(),
    full_size: z.number().int().optional(),
    diff_size: z.number().int().optional(),
  })
  .transform((s) => ({
    id: s.id,
    name: s.name,
    slug: s.slug,
    lsn: s.lsn,
    timestamp: s.timestamp,
    sourceBranchId: s.source_branch_id,
    createdAt: s.created_at,
    expiresAt: s.expires_at,
    manual: s.manual,
    fullSize: s.full_size,
    diffSize: s.diff_size,
  }));
export type Snapshot = z.output<typeof snapshotWire>;

/** A snapshot's create answers it and the operations that keep its data. */
export const snapshotCreatedWire = z.object({ snapshot: snapshotWire, operations: z.array(operationWire) });
export type SnapshotCreated = z.output<typeof snapshotCreatedWire>;

export const snapshotsResponseWire = z.object({ snapshots: z.array(snapshotWire) });

/** An update answers the snapshot only: it starts no operation. */
export const snapshotUpdatedWire = z
  .object({ snapshot: snapshotWire })
  .transform((u) => ({ snapshot: u.snapshot, operations: [] as Operation[] }));

/** A deletion (202) and a finalized restore answer the operations they started. */
export const snapshotOperationsWire = z.object({ operations: z.array(operationWire) });

/** Where and when to take a snapshot: now when neither `lsn` nor `timestamp` is given. */
export interface SnapshotCreateSpec {
  name?: string;
  /** An LSN within the branch's restore window; not with `timestamp`. */
  lsn?: string;
  /** RFC 3339, within the branch's restore window; not with `lsn`. */
  timestamp?: string;
  /** RFC 3339; the platform deletes the snapshot then. */
  expiresAt?: string;
}

/** The create's query (the document takes these as query parameters, not a body). */
export function snapshotQuery(spec: SnapshotCreateSpec): Record<string, string | undefined> {
  return { name: spec.name, lsn: spec.lsn, timestamp: spec.timestamp, expires_at: spec.expiresAt };
}

/** What may change on a snapshot; `expiresAt: null` removes its expiry. */
export interface SnapshotPatch {
  name?: string;
  expiresAt?: string | null;
}

export function snapshotPatchBody(patch: SnapshotPatch): { snapshot: Record<string, unknown> } {
  return {
    snapshot: {
      ...(patch.name === undefined ? {} : { name: patch.name }),
      ...(patch.expiresAt === undefined ? {} : { expires_at: patch.expiresAt }),
    },
  };
}

/**
 * A restore: a new branch with the snapshot's data. `finalizeRestore` puts it in the place of
 * `targetBranchId` (default: the snapshot's source branch) at once.
 */
export interface SnapshotRestoreSpec {
  name?: string;
  targetBranchId?: string;
  finalizeRestore?: boolean;
}

export function snapshotRestoreBody(spec: SnapshotRestoreSpec): Record<string, unknown> {
  return {
    ...(spec.name === undefined ? {} : { name: spec.name }),
    ...(spec.targetBranchId === undefined ? {} : { target_branch_id: spec.targetBranchId }),
    ...(spec.finalizeRestore === undefined ? {} : { finalize_restore: spec.finalizeRestore }),
  };
}

/** One entry of a backup schedule (`BackupScheduleItem`). */
export interface BackupScheduleItem {
  frequency: string;
  hour?: number | undefined;
  day?: number | undefined;
  month?: number | undefined;
  /** How long a scheduled snapshot is kept; at least 3600. */
  retentionSeconds?: number | undefined;
}

const backupScheduleItemWire = z
  .object({
    frequency: z.string(),
    hour: z.number().int().optional(),
    day: z.number().int().optional(),
    month: z.number().int().optional(),
    retention_seconds: z.number().int().optional(),
  })
  .transform((i): BackupScheduleItem => ({
    frequency: i.frequency,
    hour: i.hour,
    day: i.day,
    month: i.month,
    retentionSeconds: i.retention_seconds,
  }));

export const backupScheduleWire = z.object({ schedule: z.array(backupScheduleItemWire) });

/** A schedule's PUT answers an empty object: it starts no operation. */
export const backupScheduleSetWire = z.object({}).transform(() => ({ operations: [] as Operation[] }));

export function backupScheduleBody(schedule: readonly BackupScheduleItem[]): {
  schedule: Record<string, unknown>[];
} {
  return {
    schedule: schedule.map((i) => ({
      frequency: i.frequency,
      ...(i.hour === undefined ? {} : { hour: i.hour }),
      ...(i.day === undefined ? {} : { day: i.day }),
      ...(i.month === undefined ? {} : { month: i.month }),
      ...(i.retentionSeconds === undefined ? {} : { retention_seconds: i.retentionSeconds }),
    })),
  };
}
