// A branch's backup schedule: how often the platform takes snapshots of it and how long it keeps
// them. Kept and shown; the emulator takes no scheduled snapshot. The docs: schedules are for
// root branches, on paid plans.
import { PlatformError, badRequest } from "./errors.ts";
import type { BackupScheduleItem, BranchRecord } from "./model.ts";
import { projectLimits } from "./plans.ts";
import type { World } from "./world.ts";

export function backupScheduleOf(branch: BranchRecord): BackupScheduleItem[] {
  return branch.backupSchedule ?? [];
}

/** Replaces the branch's schedule (the body is checked by `backupScheduleBody`). */
export function setBackupSchedule(
  world: World,
  branch: BranchRecord,
  schedule: BackupScheduleItem[],
  now: number,
): void {
  if (branch.parentId !== undefined) {
    throw badRequest(`branch ${branch.id} has a parent: backup schedules apply to root branches only`);
  }
  if (projectLimits(world, branch.projectId).plan === "free") {
    throw new PlatformError(422, "backup schedules are not available on the free plan");
  }
  world.assertUnlocked(branch.projectId, [branch.id]);
  branch.backupSchedule = schedule;
  branch.updatedAt = now;
  world.changed();
}
