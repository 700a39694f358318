// A branch's history as the platform exposes it: an LSN that grows with the WAL its databases
// write, and a restore window, the project's `history_retention_seconds` back from now, within
// which a point (a timestamp or an LSN) can be asked for: to branch from, to snapshot, to restore.
// The data of a point is the store's (postgres/history.ts); this is the bookkeeping the platform's
// answers and refusals come from.
import { badRequest, type PlatformError } from "./errors.ts";
import type { BranchPoint, BranchRecord } from "./model.ts";
import { formatLsn, parseLsn } from "./postgres/lsn.ts";
import { formatTimestamp } from "./timestamps.ts";
import { historyRetentionOf } from "./views.ts";
import type { World } from "./world.ts";

/**
 * A root branch's first LSN. The figure is the initdb LSN a public pageserver log shows
 * (`min_layer_lsn=0/14EE9E8`, neondatabase/neon#10208); only its form matters.
 */
export const rootStartLsn = 0x14ee9e8;

/** Points kept per branch at most: beyond it the oldest go, and the window starts later. */
const maxPoints = 100_000;

/** The branch's LSN now. */
export function currentLsn(branch: BranchRecord): number {
  return branch.lsnHistory?.at(-1)?.[1] ?? branch.startLsn ?? rootStartLsn;
}

/** The branch's LSN at `at`: after the last change made then or before. */
export function lsnAt(branch: BranchRecord, at: number): number {
  const history = branch.lsnHistory ?? [];
  for (let i = history.length - 1; i >= 0; i--) {
    const [time, lsn] = history[i]!;
    if (time <= at) return lsn;
  }
  return branch.startLsn ?? rootStartLsn;
}

/** The time of the data an LSN names: the last change at or before it (the branch's start before any). */
function timeOfLsn(branch: BranchRecord, lsn: number, windowStart: number): number {
  const history = branch.lsnHistory ?? [];
  for (let i = history.length - 1; i >= 0; i--) {
    const [time, point] = history[i]!;
    if (point <= lsn) return Math.max(time, windowStart);
  }
  return windowStart;
}

/**
 * The start of the branch's restore window (emulated ms): the project's history retention back
 * from now, and never before the branch existed or its data was last replaced.
 */
export function windowStart(world: World, branch: BranchRecord, now: number): number {
  const project = world.projects.get(branch.projectId);
  const retention = project === undefined ? 0 : historyRetentionOf(project);
  return Math.max(
    now - retention * 1000,
    branch.createdAt,
    branch.lastResetAt ?? -Infinity,
    branch.historyFrom ?? -Infinity,
  );
}

/** A change of the branch's data at `at` wrote `walBytes` of WAL: its LSN moves on by as much. */
export function recordChange(world: World, branchId: string, at: number, walBytes: number): void {
  const branch = world.branches.get(branchId);
  if (!branch) return;
  const history = (branch.lsnHistory ??= []);
  const lsn = currentLsn(branch) + walBytes;
  const last = history.at(-1);
  if (last?.[0] === at) last[1] = lsn;
  else history.push([at, lsn]);
  // What lies before the window goes, but for the last point before it (the data at its start).
  const start = windowStart(world, branch, at);
  const before = history.findIndex(([time]) => time >= start);
  const stale = (before < 0 ? history.length : before) - 1;
  if (stale > 0) history.splice(0, stale);
  if (history.length > maxPoints) {
    history.splice(0, history.length - maxPoints);
    branch.historyFrom = history[0]![0];
  }
}

/** A point asked for by timestamp or by LSN, and the fields that asked, for the refusals. */
export interface PointRequest {
  timestamp?: string | undefined;
  lsn?: string | undefined;
}

/**
 * The point of the branch a request names, or undefined when it names none (the branch now). A
 * point in the future, or before the branch's restore window, is refused (400) naming the field.
 */
export function resolvePoint(
  world: World,
  branch: BranchRecord,
  request: PointRequest,
  fields: { timestamp: string; lsn: string },
  now: number,
): BranchPoint | undefined {
  if (request.timestamp !== undefined && request.lsn !== undefined) {
    throw badRequest(`${fields.lsn}, ${fields.timestamp}: give one or the other, not both`);
  }
  const start = windowStart(world, branch, now);
  const outside = (field: string, value: string): PlatformError => {
    const project = world.projects.get(branch.projectId);
    const retention = project === undefined ? 0 : historyRetentionOf(project);
    const earliest = lsnAt(branch, start);
    return badRequest(
      `${field}: ${value} is outside the restore window of branch ${branch.id}, which starts at ` +
        `${formatTimestamp(start)} (LSN ${formatLsn(earliest)}; history_retention_seconds: ${retention}, ` +
        `the branch's creation or its last restore): invalid branch start lsn: less than latest GC cutoff ` +
        formatLsn(earliest),
    );
  };
  if (request.timestamp !== undefined) {
    const at = Date.parse(request.timestamp);
    if (Number.isNaN(at)) throw badRequest(`${fields.timestamp}: must be an RFC 3339 timestamp`);
    if (at > now) throw badRequest(`${fields.timestamp}: ${request.timestamp} is in the future`);
    if (at < start) throw outside(fields.timestamp, request.timestamp);
    return { at, lsn: lsnAt(branch, at) };
  }
  if (request.lsn !== undefined) {
    const lsn = parseLsn(request.lsn);
    if (lsn === undefined) throw badRequest(`${fields.lsn}: must be an LSN such as 0/1A2B3C4D`);
    const head = currentLsn(branch);
    if (lsn > head) {
      throw badRequest(
        `${fields.lsn}: ${request.lsn} is ahead of branch ${branch.id}, now at ${formatLsn(head)}`,
      );
    }
    if (lsn < lsnAt(branch, start)) throw outside(fields.lsn, request.lsn);
    return { at: timeOfLsn(branch, lsn, start), lsn };
  }
  return undefined;
}
