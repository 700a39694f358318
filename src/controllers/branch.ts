// The Branch adapter: a platform branch kept as its resource declares, on the managed-resource
// layer (managed/). Observe waits out the last change's operations, then finds the branch by its
// adopted id, recorded id or name, and picks the next step (branch-steps.ts); create sends one
// branch create from the resolved parent; update does that one step (a reset from the parent, a
// PATCH of name, protection and expiry, a role or a database); delete removes it unless Orphan. A
// branch the platform deleted (its expiry) or someone deleted elsewhere is reported, never
// recreated.
import { BranchSpec, branchKind, type BranchStatus } from "../api/branch.ts";
import { restoredFromParentAtAnnotation } from "../api/group.ts";
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  UnprocessableError,
  type Branch,
  type BranchMutation,
  type Operation,
} from "../platform/index.ts";
import type { Controller, KubeObject } from "../runtime/index.ts";
import { resolveParent, type BranchObject } from "./branch-parent.ts";
import { creationExpiry, desiredName, expiryProblem, plan, usable, vanished } from "./branch-plan.ts";
import {
  contentStatus,
  contentStep,
  contentUnknown,
  restoreRequested,
  restoreStep,
  stepReason,
  type BranchContent,
  type BranchStep,
} from "./branch-steps.ts";
import { statusOperations } from "./computeendpoint-status.ts";
import { firstLook, nextPoll, observeMaxAge } from "./computeendpoint-polling.ts";
import { managedController } from "./managed/controller.ts";
import { Problem } from "./managed/failures.ts";
import { lastChange, mutationOptions } from "./managed/operations.ts";
import type {
  Change,
  Deletion,
  ExternalClient,
  ManagedKind,
  Observation,
  Pass,
  PresentObservation,
} from "./managed/types.ts";
import { resourceKind, type ControllerFactory, type KindControllerOptions } from "./options.ts";

export type { BranchObject } from "./branch-parent.ts";

export const branchResourceKind = resourceKind(branchKind);

export const branchFinalizer = "neoncloud.dev/branch";

type S = BranchStatus;
type BrPass = Pass<BranchSpec, S>;

const kind: ManagedKind<BranchSpec> = {
  resource: { ...branchResourceKind, apiVersion: branchKind.apiVersion },
  finalizer: branchFinalizer,
  spec: BranchSpec,
  credentials: (spec) => spec.credentials,
  observeOnly: () => false,
  orphanOnDelete: (spec) => spec.deletionPolicy === "Orphan",
};

/** What observe learned for create in the same pass: the parent's id (undefined: the default branch). */
const resolvedParents = new WeakMap<object, string | undefined>();

class Branches implements ExternalClient<BranchSpec, S, BranchStep> {
  private readonly pollMs: number;
  private readonly resyncMs: number;

  constructor(options: KindControllerOptions) {
    this.pollMs = options.pollIntervalMs ?? 5_000;
    this.resyncMs = options.resyncPeriodMs ?? 600_000;
  }

  async observe(pass: BrPass): Promise<Observation<S, BranchStep>> {
    const { spec, status } = pass;
    // 1. The create is still running on the platform (the branch is `init` until it ends).
    const last = await lastChange(pass, spec.projectId, undefined);
    if (last.running) return last.observation;
    const operations = last.operations;

    // 2. Find it: the adopted id, the recorded id, or its name.
    const { branch, list } = await this.find(pass);
    if (!branch) {
      if (spec.branchId) {
        throw new Problem(
          "BranchNotFound",
          `branch ${spec.branchId} not found in project ${spec.projectId}`,
          { retryAfterMs: 60_000, stalled: true },
        );
      }
      if (status.branchId) {
        const gone = vanished(status, pass.now());
        throw new Problem<S>(gone.reason, gone.message, {
          terminal: true,
          status: { currentState: "deleted", pendingState: undefined, operations: undefined },
        });
      }
      // About to create: its parent must be known first (a parent named but not in a snapshot that
      // may be as old as the resync period is looked for again in a fresh list).
      const parentName = spec.parent?.branchName;
      const parentListed = parentName === undefined || list.some((b) => b.name === parentName);
      const parent = resolveParent(
        pass.obj as BranchObject,
        spec,
        pass.cache<BranchObject>(branchResourceKind),
        parentListed ? list : await this.branches(pass, 0),
      );
      if (parent.state === "waiting") {
        // A Branch's own changes wake only itself: its parent is looked at again on the poll tick.
        return {
          state: "busy",
          status: {},
          reason: parent.reason,
          message: parent.message,
          retryAfterMs: nextPoll(this.pollMs),
        };
      }
      resolvedParents.set(pass, parent.parentId);
      return { state: "absent" };
    }
    const fields: Partial<S> = { ...observedFields(branch), operations };
    const next = await this.nextStep(pass, branch, fields);
    return {
      state: "present",
      upToDate: next === undefined,
      diff: next,
      status: fields,
      ready: usable(branch)
        ? ["True", "Available", `branch ${branch.id} is ${branch.currentState}`]
        : ["False", "BranchState", `branch ${branch.id} is ${branch.currentState}`],
      // Not usable yet (init after a create this pass did not see answered): look again soon.
      observeAfterMs: usable(branch) ? untilExpiry(branch, pass.now()) : nextPoll(this.pollMs),
    };
  }

  /**
   * The one change the branch needs next (branch-steps.ts), adding to `fields` the roles and
   * databases it listed. Roles and databases are looked at only on a usable branch whose status
   * does not show them all yet (or on a new generation): two GETs, not on every poll.
   */
  private async nextStep(pass: BrPass, branch: Branch, fields: Partial<S>): Promise<BranchStep | undefined> {
    const { spec, status } = pass;
    const restore = usable(branch)
      ? restoreRequested(pass.obj.metadata.annotations?.[restoredFromParentAtAnnotation], status)
      : undefined;
    if (restore !== undefined) {
      const step = restoreStep(branch, restore);
      if ("problem" in step)
        throw new Problem<S>("RestoreRefused", step.problem, { terminal: true, status: fields });
      return step;
    }
    const patch = plan(spec, branch, pass.obj.metadata.uid ?? "", pass.now());
    if (patch) return { action: "update", patch };
    if (!usable(branch) || !contentUnknown(spec, status, pass.obj.metadata.generation)) return undefined;
    const content = await this.content(pass, branch.id);
    Object.assign(fields, contentStatus(spec, content));
    const step = contentStep(spec, content, branch.id);
    if (step && "problem" in step) {
      throw new Problem<S>("InvalidSpec", step.problem, { terminal: true, status: fields });
    }
    return step;
  }

  private async content(pass: BrPass, branchId: string): Promise<BranchContent> {
    const { client, spec, signal } = pass;
    const [roles, databases] = await Promise.all([
      client.listRoles(spec.projectId, branchId, { signal }),
      client.listDatabases(spec.projectId, branchId, { signal }),
    ]);
    return { roles, databases };
  }

  async create(pass: BrPass): Promise<Change<S>> {
    const { spec, obj } = pass;
    const problem = expiryProblem(spec.expiresAt, pass.now());
    if (problem) throw new Problem("InvalidSpec", problem, { terminal: true });
    const parentId = resolvedParents.get(pass);
    const name = desiredName(spec, obj.metadata.uid ?? "");
    const expiresAt = creationExpiry(spec, pass.now());
    let result: BranchMutation;
    try {
      result = await pass.client.createBranch(
        spec.projectId,
        {
          ...(parentId === undefined ? {} : { parentId }),
          ...(name === undefined ? {} : { name }),
          ...(spec.protected === undefined ? {} : { protected: spec.protected }),
          ...(expiresAt === undefined ? {} : { expiresAt }),
        },
        mutationOptions(pass),
      );
    } catch (err) {
      throw platformProblem(err, spec);
    }
    const from = parentId ?? "the default branch";
    pass.events.normal("Created", "Create", `created branch ${result.branch.id} from ${from}`);
    // Created from the parent: an annotation already there asks for nothing more.
    const restoredFromParentAt = obj.metadata.annotations?.[restoredFromParentAtAnnotation];
    return {
      status: {
        ...observedFields(result.branch),
        operations: statusOperations(result.operations),
        ...(restoredFromParentAt === undefined ? {} : { restoredFromParentAt }),
      },
      reason: "Creating",
      message: `creating branch ${result.branch.id} from ${from}`,
      inProgress: true,
      requeueAfterMs: firstLook(pass.client, result.operations, this.pollMs),
    };
  }

  async update(pass: BrPass, observed: PresentObservation<S, BranchStep>): Promise<Change<S>> {
    const step = observed.diff;
    const branchId = observed.status.branchId;
    if (!step || !branchId) throw new Error("update without a planned change");
    const { projectId } = pass.spec;
    const options = mutationOptions(pass);
    let operations: Operation[];
    let status: Partial<S>;
    let message: string;
    let action: string;
    try {
      switch (step.action) {
        case "restore": {
          const result = await pass.client.restoreBranch(
            projectId,
            branchId,
            { sourceBranchId: step.parentId },
            options,
          );
          operations = result.operations;
          // Its roles and databases are the parent's now: looked at again once the restore ends.
          status = {
            ...observedFields(result.branch),
            restoredFromParentAt: step.restoredFromParentAt,
            roles: undefined,
            databases: undefined,
          };
          message = `resetting branch ${branchId} from its parent ${step.parentId} (${restoredFromParentAtAnnotation}=${step.restoredFromParentAt})`;
          action = "Restore";
          break;
        }
        case "update": {
          const result = await pass.client.updateBranch(projectId, branchId, step.patch, options);
          operations = result.operations;
          status = observedFields(result.branch);
          message = `updating ${Object.keys(step.patch).join(", ")} of branch ${branchId}`;
          action = "Update";
          break;
        }
        case "createRole": {
          operations = (await pass.client.createRole(projectId, branchId, step.name, options)).operations;
          status = { roles: [...(observed.status.roles ?? []), step.name] };
          message = `creating role ${step.name} on branch ${branchId}`;
          action = "CreateRole";
          break;
        }
        case "createDatabase": {
          const spec = { name: step.name, ownerName: step.owner };
          operations = (await pass.client.createDatabase(projectId, branchId, spec, options)).operations;
          status = {
            databases: [...(observed.status.databases ?? []), { name: step.name, owner: step.owner }],
          };
          message = `creating database ${step.name} owned by ${step.owner} on branch ${branchId}`;
          action = "CreateDatabase";
          break;
        }
      }
    } catch (err) {
      throw platformProblem(err, pass.spec, step);
    }
    const reason = stepReason(step);
    pass.events.normal(reason, action, message);
    const started = operations.length > 0;
    return {
      status: { ...status, operations: statusOperations(operations) },
      reason,
      message,
      inProgress: started,
      requeueAfterMs: started ? firstLook(pass.client, operations, this.pollMs) : 0,
    };
  }

  async delete(pass: BrPass): Promise<Deletion> {
    let branch: Branch | undefined;
    try {
      branch = (await this.find(pass)).branch;
    } catch (err) {
      // A project that does not exist holds no branch of ours: nothing to wait for.
      if (err instanceof Problem && err.reason === "ProjectNotFound") return { gone: true };
      throw err;
    }
    if (!branch) return { gone: true };
    let result: BranchMutation | undefined;
    try {
      result = await pass.client.deleteBranch(pass.spec.projectId, branch.id, mutationOptions(pass));
    } catch (err) {
      if (err instanceof NotFoundError) return { gone: true };
      if (err instanceof UnprocessableError) {
        const why = branch.protected
          ? "it is protected: set spec.protected to false, or deletionPolicy to Orphan"
          : err.message;
        throw new Problem("DeleteRefused", `the platform refused to delete branch ${branch.id}: ${why}`, {
          retryAfterMs: 30_000,
        });
      }
      throw err;
    }
    // 204: it did not exist any more. Otherwise come back to see it gone before the finalizer goes.
    if (!result) return { gone: true };
    pass.events.normal("Deleted", "Delete", `deleted branch ${branch.id}`);
    return { gone: false, requeueAfterMs: Math.min(this.pollMs, 1_000) };
  }

  /**
   * The branch this resource stands for: by id (adopted or recorded), else by name, in the
   * project's branch snapshot, shared with the project's other Branches and kept current by this
   * operator's own changes (platform/snapshot.ts), so a create storm does not list the project
   * once per resource and pass. The snapshot may be as old as the resync period: where changes
   * made elsewhere matter (a branch missing by id, deleted or expired; one not usable yet, whose
   * change this operator did not see answered) a fresh list decides. The list is returned for
   * the parent's lookup.
   */
  private async find(pass: BrPass): Promise<{ branch: Branch | undefined; list: readonly Branch[] }> {
    const { spec, status } = pass;
    const id = spec.branchId ?? status.branchId;
    const name = desiredName(spec, pass.obj.metadata.uid ?? "");
    const match = (list: readonly Branch[]) =>
      id ? list.find((b) => b.id === id) : list.find((b) => b.name === name);
    const list = await this.branches(pass, observeMaxAge(pass.obj, this.resyncMs));
    const found = match(list);
    if (found ? usable(found) && !expired(found, pass.now()) : !id) return { branch: found, list };
    const fresh = await this.branches(pass, 0);
    return { branch: match(fresh), list: fresh };
  }

  /** The project's branches from a list no older than `maxAgeMs`. */
  private async branches(pass: BrPass, maxAgeMs: number): Promise<readonly Branch[]> {
    const { spec, client } = pass;
    try {
      return await client.branchSnapshot(spec.projectId, { maxAgeMs });
    } catch (err) {
      if (err instanceof NotFoundError) {
        throw new Problem("ProjectNotFound", `project ${spec.projectId} not found`, {
          retryAfterMs: 60_000,
          stalled: true,
        });
      }
      throw err;
    }
  }
}

/** Past its expiry: the platform deletes it then, so a list from before may still show it. */
function expired(branch: Branch, now: Date): boolean {
  return branch.expiresAt !== undefined && Date.parse(branch.expiresAt) <= now.getTime();
}

/** The branch's own fields, as `kubectl get -o yaml` should show them. */
function observedFields(branch: Branch): Partial<S> {
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
  };
}

/** Look again just after the platform's expiry, so the resource reports it without waiting for a resync. */
function untilExpiry(branch: Branch, now: Date): number | undefined {
  if (branch.expiresAt === undefined) return undefined;
  return Math.max(Date.parse(branch.expiresAt) - now.getTime(), 0) + 1_000;
}

/** Names what the platform refused in the resource's own terms. */
function platformProblem(err: unknown, spec: BranchSpec, step?: BranchStep): unknown {
  if (step?.action === "restore" && err instanceof BadRequestError) {
    // A branch with children needs its old state kept under a new name, which this does not do.
    return new Problem(
      "RestoreRefused",
      `the platform refused to reset the branch from its parent: ${err.message} (a branch with child branches cannot be reset from its parent here)`,
      { terminal: true },
    );
  }
  if (step !== undefined && step.action !== "update") return err;
  if (err instanceof ConflictError) {
    return new Problem("BranchNameTaken", `project ${spec.projectId}: ${err.message}`, {
      retryAfterMs: 60_000,
      stalled: true,
    });
  }
  if (err instanceof NotFoundError) {
    return new Problem("ParentNotFound", `parent branch not found: ${err.message}`, {
      retryAfterMs: 60_000,
      stalled: true,
    });
  }
  return err;
}

/**
 * The Branch controller. `create` lets a Manager own it; by default it is a standalone
 * Controller (tests).
 */
export function branchController(
  options: KindControllerOptions,
  create?: ControllerFactory<BranchObject>,
): Controller<BranchObject> {
  return managedController<BranchSpec, S, BranchStep>({
    kind,
    external: new Branches(options),
    options,
    create: create as ControllerFactory<KubeObject> | undefined,
  }) as unknown as Controller<BranchObject>;
}
