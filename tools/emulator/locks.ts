// What a running operation locks against new mutations (423). The platform
// "limits overlapping operations per project", so by default an unsettled
// operation locks its whole project; the `branch` scope is an optimistic
// variant where it locks only its branch.
import { projectLocked } from "./errors.ts";
import type { OperationRecord } from "./model.ts";

export type LockScope = "project" | "branch";

export class OperationLocks {
  readonly scope: LockScope;
  /** Unsettled operations per lock (a project, or a project's branch). */
  private readonly holders = new Map<string, number>();

  constructor(scope: LockScope) {
    this.scope = scope;
  }

  /**
   * 423 while an unsettled operation conflicts with a mutation of these branches: one of the
   * same branch, or of the project at all in the project scope. An operation of no branch
   * locks the whole project in either scope.
   */
  assertUnlocked(projectId: string, branchIds: readonly string[]): void {
    const locks =
      this.scope === "project" ? [projectId] : [projectId, ...branchIds.map((b) => `${projectId}/${b}`)];
    if (locks.some((lock) => (this.holders.get(lock) ?? 0) > 0)) throw projectLocked();
  }

  /** An operation takes (+1) or releases (-1) its lock; check_availability never locks. */
  hold(op: OperationRecord, delta: 1 | -1): void {
    if (op.action === "check_availability") return;
    const lock =
      this.scope === "project" || op.branchId === undefined ? op.projectId : `${op.projectId}/${op.branchId}`;
    const count = (this.holders.get(lock) ?? 0) + delta;
    if (count > 0) this.holders.set(lock, count);
    else this.holders.delete(lock);
  }
}
