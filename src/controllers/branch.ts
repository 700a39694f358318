// The Branch adapter: a platform branch kept as its resource declares, on the managed-resource
// layer (managed/). Observe waits out the create's operations, then finds the branch by its
// adopted id, recorded id or name; create sends one branch create from the resolved parent;
// update sends one PATCH (name, protection, expiry); delete removes it unless Orphan. A branch
// the platform deleted (its expiry) or someone deleted elsewhere is reported, never recreated.
import { BranchSpec, branchKind, type BranchStatus } from "../api/branch.ts";
import {
  ConflictError,
  NotFoundError,
  UnprocessableError,
  type Branch,
  type BranchMutation,
  type BranchPatch,
} from "../platform/index.ts";
import type { Controller, KubeObject } from "../runtime/index.ts";
import { resolveParent, type BranchObject } from "./branch-parent.ts";
import { creationExpiry, desiredName, expiryProblem, plan, usable, vanished } from "./branch-plan.ts";
import { statusOperations } from "./computeendpoint-status.ts";
import { firstLook, nextPoll } from "./computeendpoint-polling.ts";
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

class Branches implements ExternalClient<BranchSpec, S, BranchPatch> {
  private readonly pollMs: number;

  constructor(options: KindControllerOptions) {
    this.pollMs = options.pollIntervalMs ?? 5_000;
  }

  async observe(pass: BrPass): Promise<Observation<S, BranchPatch>> {
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
      // About to create: its parent must be known first.
      const parent = resolveParent(
        pass.obj as BranchObject,
        spec,
        pass.cache<BranchObject>(branchResourceKind),
        list ?? (await listOf(pass)),
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
    const next = plan(spec, branch, pass.obj.metadata.uid ?? "", pass.now());
    return {
      state: "present",
      upToDate: next === undefined,
      diff: next,
      status: { ...observedFields(branch), operations },
      ready: usable(branch)
        ? ["True", "Available", `branch ${branch.id} is ${branch.currentState}`]
        : ["False", "BranchState", `branch ${branch.id} is ${branch.currentState}`],
      // Not usable yet (init after a create this pass did not see answered): look again soon.
      observeAfterMs: usable(branch) ? untilExpiry(branch, pass.now()) : nextPoll(this.pollMs),
    };
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
    return {
      status: { ...observedFields(result.branch), operations: statusOperations(result.operations) },
      reason: "Creating",
      message: `creating branch ${result.branch.id} from ${from}`,
      inProgress: true,
      requeueAfterMs: firstLook(pass.client, result.operations, this.pollMs),
    };
  }

  async update(pass: BrPass, observed: PresentObservation<S, BranchPatch>): Promise<Change<S>> {
    const patch = observed.diff;
    const branchId = observed.status.branchId;
    if (!patch || !branchId) throw new Error("update without a planned change");
    let result: BranchMutation;
    try {
      result = await pass.client.updateBranch(pass.spec.projectId, branchId, patch, mutationOptions(pass));
    } catch (err) {
      throw platformProblem(err, pass.spec);
    }
    const message = `updating ${Object.keys(patch).join(", ")} of branch ${branchId}`;
    pass.events.normal("Updating", "Update", message);
    const started = result.operations.length > 0;
    return {
      status: { ...observedFields(result.branch), operations: statusOperations(result.operations) },
      reason: "Updating",
      message,
      inProgress: started,
      requeueAfterMs: started ? firstLook(pass.client, result.operations, this.pollMs) : 0,
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
   * The branch this resource stands for: by id (adopted or recorded) with one GET, else by name
   * in the project's list (the list is returned for the parent's lookup).
   */
  private async find(pass: BrPass): Promise<{ branch: Branch | undefined; list?: Branch[] }> {
    const { spec, status, client } = pass;
    const id = spec.branchId ?? status.branchId;
    try {
      if (id) {
        try {
          return { branch: await client.getBranch(spec.projectId, id, { signal: pass.signal }) };
        } catch (err) {
          if (!(err instanceof NotFoundError)) throw err;
          // The branch, or the project: a missing project reads differently.
          await listOf(pass);
          return { branch: undefined };
        }
      }
      const list = await listOf(pass);
      const name = desiredName(spec, pass.obj.metadata.uid ?? "");
      return { branch: list.find((b) => b.name === name), list };
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

function listOf(pass: BrPass): Promise<Branch[]> {
  return pass.client.listBranches(pass.spec.projectId, { signal: pass.signal });
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
function platformProblem(err: unknown, spec: BranchSpec): unknown {
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
  return managedController<BranchSpec, S, BranchPatch>({
    kind,
    external: new Branches(options),
    options,
    create: create as ControllerFactory<KubeObject> | undefined,
  }) as unknown as Controller<BranchObject>;
}
