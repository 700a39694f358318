// The Branch adapter: the platform verbs of a branch and its plan. It finds the branch by its
// adopted id, recorded id or name in the project's shared branch snapshot (with its roles and
// databases when the spec wants some the status does not show), creates it from its parent,
// makes the one step plan names (a reset from the parent, a PATCH of name, protection and expiry,
// a role, a database), and deletes it. A branch the platform deleted (its expiry) or someone
// deleted elsewhere is reported, never recreated.
import type { BranchSpec, BranchStatus } from "../../api/branch.ts";
import { restoredFromParentAtAnnotation } from "../../api/group.ts";
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  UnprocessableError,
  type Branch,
} from "../../platform/index.ts";
import { Delay, Problem, invalidSpec, notFound } from "../managed/errors.ts";
import { nextPoll, observeMaxAge } from "../managed/polling.ts";
import type { Adapter, Answer, Pass, Verdict } from "../managed/types.ts";
import {
  creationExpiry,
  creationName,
  desiredName,
  expiryProblem,
  ownerAnnotation,
  plan,
  usable,
  vanished,
} from "./plan.ts";
import {
  contentStatus,
  contentStep,
  contentUnknown,
  restoreRequested,
  restoreStep,
  updateStep,
  type BranchContent,
  type BranchStep,
} from "./steps.ts";

type S = BranchStatus;
type BrPass = Pass<BranchSpec, S>;

/** A branch as found: with its roles and databases when this pass listed them. */
export interface ObservedBranch {
  branch: Branch;
  content?: BranchContent | undefined;
}

export class Branches implements Adapter<BranchSpec, S, ObservedBranch, BranchStep> {
  private readonly pollMs: number;
  private readonly resyncMs: number;

  constructor(options: { pollIntervalMs?: number | undefined; resyncPeriodMs?: number | undefined }) {
    this.pollMs = options.pollIntervalMs ?? 5_000;
    this.resyncMs = options.resyncPeriodMs ?? 600_000;
  }

  /**
   * The branch this resource stands for: by id (adopted or recorded), else by name, in the
   * project's branch snapshot, shared with the project's other Branches and kept current by this
   * operator's own changes, so a create storm does not list the project once per resource and
   * pass. The snapshot may be as old as the resync period: where changes made elsewhere matter (a
   * branch missing by id, deleted or expired; one not usable yet, whose change this operator did
   * not see answered) a fresh list decides. Roles and databases are listed only on a usable
   * branch whose status does not show them all yet (or on a new generation): two GETs, not on
   * every poll.
   */
  async find(pass: BrPass): Promise<ObservedBranch | undefined> {
    const { spec, status, client } = pass;
    const id = spec.branchId ?? status.branchId;
    const name = desiredName(spec, pass.mark);
    // This resource's own: its owner mark in the branch's annotations, or (made before marks, or
    // a snapshot that recorded a create answer without annotations) the name it gives.
    const ours = (b: Branch) =>
      b.annotations?.[ownerAnnotation] === pass.mark ||
      b.name === pass.mark ||
      b.name === creationName(pass.obj.metadata.uid ?? "");
    const match = (list: readonly Branch[]) =>
      id
        ? list.find((b) => b.id === id)
        : (list.find((b) => b.annotations?.[ownerAnnotation] === pass.mark) ??
          list.find((b) => b.name === name));
    let branch = match(
      await client.branchSnapshot(spec.projectId, { maxAgeMs: observeMaxAge(pass.obj, this.resyncMs) }),
    );
    const unsure = (b: Branch) => !usable(b) || expired(b, pass.now()) || (id === undefined && !ours(b));
    if (branch ? unsure(branch) : id !== undefined) {
      branch = match(await client.branchSnapshot(spec.projectId, { maxAgeMs: 0 }));
    }
    if (!branch) return undefined;
    // A branch of that name that this resource did not create is adopted only when the spec names
    // it; a resource being deleted leaves it alone.
    if (id === undefined && !ours(branch)) {
      if (pass.deleting) return undefined;
      throw new Problem(
        "BranchNameTaken",
        `a branch named ${branch.name} already exists in project ${spec.projectId} and this resource did not create it: ` +
          `to manage it, set spec.branchId: ${branch.id}; or choose another spec.name`,
        { retry: { after: Delay.conflict }, stalled: true },
      );
    }
    if (!usable(branch) || pass.deleting || !contentUnknown(spec, status, pass.obj.metadata.generation)) {
      return { branch };
    }
    const [roles, databases] = await Promise.all([
      client.listRoles(spec.projectId, branch.id, { signal: pass.signal }),
      client.listDatabases(spec.projectId, branch.id, { signal: pass.signal }),
    ]);
    return { branch, content: { roles, databases } };
  }

  id(observed: ObservedBranch): string {
    return observed.branch.id;
  }

  markOf(observed: ObservedBranch): string | undefined {
    return observed.branch.annotations?.[ownerAnnotation];
  }

  /**
   * The next step, in the order that lets each succeed: a reset from the parent first (it
   * replaces the branch's data, roles and databases included), then the branch's own fields,
   * then missing roles, then missing databases. While the resource is being deleted: only
   * removing the protection the spec no longer asks for, so the deletion can go on.
   */
  plan(pass: BrPass, { branch, content }: ObservedBranch): BranchStep | undefined {
    const { spec, status, obj } = pass;
    if (pass.deleting) {
      return spec.protected === false && branch.protected
        ? updateStep({ protected: false }, branch.id)
        : undefined;
    }
    const restore = usable(branch)
      ? restoreRequested(obj.metadata.annotations?.[restoredFromParentAtAnnotation], status)
      : undefined;
    if (restore !== undefined) {
      const next = restoreStep(branch, restore);
      if ("problem" in next) {
        throw new Problem<S>("RestoreRefused", next.problem, {
          retry: "onChange",
          status: this.status({ branch }),
        });
      }
      return next;
    }
    const patch = plan(spec, branch, pass.mark, pass.now());
    if (patch) return updateStep(patch, branch.id);
    if (!content) return undefined;
    const next = contentStep(spec, content, branch.id);
    if (next && "problem" in next) throw invalidSpec<S>(next.problem, this.status({ branch, content }));
    return next;
  }

  async create(pass: BrPass): Promise<Answer<ObservedBranch, S>> {
    const { spec, obj } = pass;
    const problem = expiryProblem(spec.expiresAt, pass.now());
    if (problem) throw invalidSpec(problem);
    const parentId = await this.parentId(pass);
    const name = desiredName(spec, pass.mark);
    const expiresAt = creationExpiry(spec, pass.now());
    const result = await pass.client.createBranch(
      spec.projectId,
      {
        ...(parentId === undefined ? {} : { parentId }),
        ...(name === undefined ? {} : { name }),
        ...(spec.protected === undefined ? {} : { protected: spec.protected }),
        ...(expiresAt === undefined ? {} : { expiresAt }),
        // The owner mark: which resource's branch it is, after a lost answer, a lost status or a
        // restore, and for another installation on the account.
        annotations: { [ownerAnnotation]: pass.mark },
      },
      pass.mutation(),
    );
    // Created from the parent: an annotation already there asks for nothing more.
    const restoredFromParentAt = obj.metadata.annotations?.[restoredFromParentAtAnnotation];
    return {
      object: { branch: result.branch },
      operations: result.operations,
      status: restoredFromParentAt === undefined ? {} : { restoredFromParentAt },
      message: `created branch ${result.branch.id} from ${parentId ?? "the default branch"}`,
    };
  }

  async apply(
    pass: BrPass,
    next: BranchStep,
    { branch }: ObservedBranch,
  ): Promise<Answer<ObservedBranch, S>> {
    const { client, spec, status } = pass;
    const { projectId } = spec;
    const options = pass.mutation();
    switch (next.change) {
      case "restore": {
        const result = await client.restoreBranch(
          projectId,
          branch.id,
          { sourceBranchId: next.parentId },
          options,
        );
        // Its roles and databases are the parent's now: looked at again once the restore ends.
        return {
          object: { branch: result.branch },
          operations: result.operations,
          status: { restoredFromParentAt: next.restoredFromParentAt, roles: undefined, databases: undefined },
        };
      }
      case "update": {
        const result = await client.updateBranch(projectId, branch.id, next.patch, options);
        return { object: { branch: result.branch }, operations: result.operations };
      }
      case "createRole": {
        const result = await client.createRole(projectId, branch.id, next.name, options);
        return { operations: result.operations, status: { roles: [...(status.roles ?? []), next.name] } };
      }
      case "createDatabase": {
        const result = await client.createDatabase(
          projectId,
          branch.id,
          { name: next.name, ownerName: next.owner },
          options,
        );
        const databases = [...(status.databases ?? []), { name: next.name, owner: next.owner }];
        return { operations: result.operations, status: { databases } };
      }
    }
  }

  async delete(pass: BrPass, { branch }: ObservedBranch): Promise<Answer<ObservedBranch, S> | "gone"> {
    try {
      const result = await pass.client.deleteBranch(pass.spec.projectId, branch.id, pass.mutation());
      // 204: it did not exist any more.
      return result ? { operations: result.operations, message: `deleted branch ${branch.id}` } : "gone";
    } catch (err) {
      if (err instanceof NotFoundError) return "gone";
      if (err instanceof UnprocessableError) {
        const why = branch.protected
          ? "it is protected: set spec.protected to false, or deletionPolicy to Orphan"
          : err.message;
        throw new Problem("DeleteRefused", `the platform refused to delete branch ${branch.id}: ${why}`, {
          retry: { after: Delay.deleteRefused },
        });
      }
      throw err;
    }
  }

  /** The branch's own fields, and the roles and databases the spec names that it has. */
  status({ branch, content }: ObservedBranch, pass?: BrPass): Partial<S> {
    return {
      branchId: branch.id,
      name: branch.name,
      parentId: branch.parentId,
      parentLsn: branch.parentLsn,
      parentTimestamp: branch.parentTimestamp,
      currentState: branch.currentState,
      pendingState: branch.pendingState,
      protected: branch.protected,
      default: branch.default,
      createdAt: branch.createdAt,
      updatedAt: branch.updatedAt,
      expiresAt: branch.expiresAt,
      lastResetAt: branch.lastResetAt,
      logicalSize: branch.logicalSize,
      ...(content && pass ? contentStatus(pass.spec, content) : {}),
    };
  }

  ready({ branch }: ObservedBranch): Verdict {
    return usable(branch)
      ? ["True", "Available", `branch ${branch.id} is ${branch.currentState}`]
      : ["False", "BranchState", `branch ${branch.id} is ${branch.currentState}`];
  }

  /** Gone since it was recorded: the platform's expiry, or a deletion elsewhere. Never recreated. */
  vanished(pass: BrPass): Problem<S> {
    const gone = vanished(pass.status, pass.now());
    return new Problem<S>(gone.reason, gone.message, {
      retry: "onChange",
      status: { currentState: "deleted", pendingState: undefined, operations: undefined },
    });
  }

  /** Names what the platform refused in the resource's own terms. */
  explain(err: unknown, pass: BrPass, next: BranchStep | "create" | "delete"): unknown {
    const { spec } = pass;
    if (
      next !== "create" &&
      next !== "delete" &&
      next.change === "restore" &&
      err instanceof BadRequestError
    ) {
      // A branch with children needs its old state kept under a new name, which this does not do.
      return new Problem(
        "RestoreRefused",
        `the platform refused to reset the branch from its parent: ${err.message} (a branch with child branches cannot be reset from its parent here)`,
        { retry: "onChange" },
      );
    }
    if (next === "delete" || (next !== "create" && next.change !== "update")) return err;
    if (err instanceof ConflictError) {
      return new Problem("BranchNameTaken", `project ${spec.projectId}: ${err.message}`, {
        retry: { after: Delay.conflict },
        stalled: true,
      });
    }
    if (next === "create" && err instanceof NotFoundError) {
      const parent = spec.parent?.branchId ?? spec.parent?.branchName ?? "(the default branch)";
      return notFound("ParentNotFound", `parent branch ${parent} not found in project ${spec.projectId}`);
    }
    return err;
  }

  /** Look again just after the platform's expiry; while not usable, on the next poll tick. */
  observeAfterMs(pass: BrPass, { branch }: ObservedBranch): number | undefined {
    if (!usable(branch)) return nextPoll(this.pollMs);
    if (branch.expiresAt === undefined) return undefined;
    return Math.max(Date.parse(branch.expiresAt) - pass.now().getTime(), 0) + 1_000;
  }

  /** The parent's id (undefined: the default branch); a name is looked up in the project's list. */
  private async parentId(pass: BrPass): Promise<string | undefined> {
    const { spec, client } = pass;
    const parent = spec.parent;
    if (parent?.branchName === undefined) return parent?.branchId;
    const named = (list: readonly Branch[]) => list.find((b) => b.name === parent.branchName);
    const found =
      named(await client.branchSnapshot(spec.projectId, { maxAgeMs: this.resyncMs })) ??
      named(await client.branchSnapshot(spec.projectId, { maxAgeMs: 0 }));
    if (!found)
      throw notFound("ParentNotFound", `no branch named ${parent.branchName} in project ${spec.projectId}`);
    return found.id;
  }
}

/** Past its expiry: the platform deletes it then, so a list from before may still show it. */
function expired(branch: Branch, now: Date): boolean {
  return branch.expiresAt !== undefined && Date.parse(branch.expiresAt) <= now.getTime();
}
