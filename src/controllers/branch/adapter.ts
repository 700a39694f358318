// The Branch adapter: the platform verbs of a branch. It finds the branch in the project's shared
// snapshot, creates it from its parent with its owner mark, makes the one change its plan names
// (plan.ts), and deletes it. A branch gone since it was recorded is reported, never recreated.
import type { BranchSpec, BranchStatus } from "../../api/branch.ts";
import { restoredFromParentAtAnnotation } from "../../api/group.ts";
import { BadRequestError, ConflictError, NotFoundError, UnprocessableError } from "../../platform/index.ts";
import { Delay, Problem, invalidSpec, notFound } from "../managed/errors.ts";
import { lookUp, nextPoll } from "../managed/polling.ts";
import type { Adapter, Answer, ChildCreate, Pass, Verdict } from "../managed/types.ts";
import * as rules from "./plan.ts";

type S = BranchStatus;
type BrPass = Pass<BranchSpec, S>;
type Observed = rules.ObservedBranch;

/** The project's branch list, as old as `maxAgeMs` allows (lookUp: a shared snapshot). */
const branches = (pass: BrPass) => (maxAgeMs: number) =>
  pass.client.branchSnapshot(pass.spec.projectId, { maxAgeMs });

export class Branches implements Adapter<BranchSpec, S, Observed, rules.BranchStep> {
  private readonly pollMs: number;
  private readonly resyncMs: number;

  constructor(options: { pollIntervalMs?: number | undefined; resyncPeriodMs?: number | undefined }) {
    this.pollMs = options.pollIntervalMs ?? 5_000;
    this.resyncMs = options.resyncPeriodMs ?? 600_000;
  }

  /** By id (adopted or recorded), else by owner mark or name; with its content when unknown. */
  async find(pass: BrPass): Promise<Observed | undefined> {
    const { spec, status, client, mark } = pass;
    const id = spec.branchId ?? status.branchId;
    const name = rules.desiredName(spec, mark);
    // This resource's own: its owner mark, or (made before marks, or a snapshot that recorded a
    // create answer without annotations) the name it gives; `k8s-<uid>` was an earlier version's.
    const ours = (b: Observed) =>
      rules.markOf(b) === mark || b.name === mark || b.name === `k8s-${pass.obj.metadata.uid ?? ""}`;
    const match = (list: readonly Observed[]) =>
      id
        ? list.find((b) => b.id === id)
        : (list.find((b) => rules.markOf(b) === mark) ?? list.find((b) => b.name === name));
    // Missing by id, expired, not usable yet (a change whose answer this operator did not see), or
    // found by name without this resource's mark: a fresh list decides.
    const unsure = (b: Observed | undefined) =>
      b ? !rules.usable(b) || rules.expired(b.expiresAt, pass.now()) || (!id && !ours(b)) : !!id;
    const branch = await lookUp(pass.obj, this.resyncMs, branches(pass), match, unsure);
    if (!branch) return undefined;
    // A branch of that name this resource did not create is adopted only when the spec names it;
    // a resource being deleted leaves it alone.
    if (id === undefined && !ours(branch)) {
      if (pass.deleting) return undefined;
      throw nameTaken(
        `a branch named ${branch.name} already exists in project ${spec.projectId} and this resource did not create it: ` +
          `to manage it, set spec.branchId: ${branch.id}; or choose another spec.name`,
      );
    }
    const generation = pass.obj.metadata.generation;
    if (!rules.usable(branch) || pass.deleting || !rules.contentUnknown(spec, status, generation))
      return branch;
    const [roles, databases] = await Promise.all([
      client.listRoles(spec.projectId, branch.id, { signal: pass.signal }),
      client.listDatabases(spec.projectId, branch.id, { signal: pass.signal }),
    ]);
    const owned = databases.map((d) => ({ name: d.name, owner: d.ownerName }));
    return { ...branch, content: { roles: roles.map((r) => r.name), databases: owned } };
  }

  readonly id = (branch: Observed) => branch.id;
  readonly annotationsOf = (branch: Observed) => branch.annotations;
  readonly plan = rules.nextStep;
  readonly status = rules.branchStatus;
  readonly vanished = (pass: BrPass) => rules.vanished(pass.status, pass.now());

  async create(pass: BrPass, child?: ChildCreate): Promise<Answer<Observed, S>> {
    const { spec, obj } = pass;
    const problem = rules.expiryProblem(spec.expiresAt, pass.now());
    if (problem) throw invalidSpec(problem);
    const parentId = await this.parentId(pass);
    const created = await pass.client.createBranch(
      spec.projectId,
      {
        parentId,
        name: rules.desiredName(spec, pass.mark),
        protected: spec.protected,
        expiresAt: rules.creationExpiry(spec, pass.now()),
        // The owner mark: whose it is after a lost answer or status, a restore, to other installations.
        annotations: { [rules.ownerAnnotation]: pass.mark, ...child?.annotations },
        ...(child?.body as object), // what the create makes for it (its endpoint)
      },
      pass.mutation(),
    );
    return {
      object: created.branch,
      operations: created.operations,
      // Created from the parent: an annotation already there asks for no reset.
      status: { restoredFromParentAt: obj.metadata.annotations?.[restoredFromParentAtAnnotation] },
      message: `created branch ${created.branch.id} from ${parentId ?? "the default branch"}`,
    };
  }

  async apply(pass: BrPass, next: rules.BranchStep, { id }: Observed): Promise<Answer<Observed, S>> {
    const { client, spec } = pass;
    const [projectId, options] = [spec.projectId, pass.mutation()];
    switch (next.change) {
      case "restore": {
        const result = await client.restoreBranch(projectId, id, { sourceBranchId: next.parentId }, options);
        // Its roles and databases are the parent's now: looked at again once the restore ends.
        const { restoredFromParentAt } = next;
        const status = { restoredFromParentAt, roles: undefined, databases: undefined };
        return { object: result.branch, operations: result.operations, status };
      }
      case "update": {
        const result = await client.updateBranch(projectId, id, next.patch, options);
        return { object: result.branch, operations: result.operations };
      }
      // An answer of operations only: what the branch then has is read back on the next pass.
      case "createRole":
        return await client.createRole(projectId, id, next.name, options);
      case "createDatabase": {
        const database = { name: next.name, ownerName: next.owner };
        return await client.createDatabase(projectId, id, database, options);
      }
    }
  }

  async delete(pass: BrPass, branch: Observed): Promise<Answer<Observed, S> | "gone"> {
    try {
      const result = await pass.client.deleteBranch(pass.spec.projectId, branch.id, pass.mutation());
      // 204: it did not exist any more.
      return result ? { operations: result.operations, message: `deleted branch ${branch.id}` } : "gone";
    } catch (err) {
      if (err instanceof NotFoundError) return "gone";
      if (!(err instanceof UnprocessableError)) throw err;
      const why = branch.protected
        ? "it is protected: set spec.protected to false, or deletionPolicy to Orphan"
        : err.message;
      throw new Problem("DeleteRefused", `the platform refused to delete branch ${branch.id}: ${why}`, {
        retry: { after: Delay.deleteRefused },
      });
    }
  }

  ready(branch: Observed): Verdict {
    const state = `branch ${branch.id} is ${branch.currentState}`;
    return rules.usable(branch) ? ["True", "Available", state] : ["False", "BranchState", state];
  }

  /** Names what the platform refused in the resource's own terms. */
  explain(err: unknown, { spec }: BrPass, next: rules.BranchStep | "create" | "delete"): unknown {
    const change = typeof next === "string" ? next : next.change;
    if (change === "restore" && err instanceof BadRequestError) {
      // A branch with children needs its old state kept under a new name, which this does not do.
      const why = "a branch with child branches cannot be reset from its parent here";
      const message = `the platform refused to reset the branch from its parent: ${err.message} (${why})`;
      return new Problem("RestoreRefused", message, { retry: "onChange" });
    }
    if ((change === "create" || change === "update") && err instanceof ConflictError)
      return nameTaken(`project ${spec.projectId}: ${err.message}`);
    if (change === "create" && err instanceof NotFoundError) {
      const parent = spec.parent?.branchId ?? spec.parent?.branchName ?? "(the default branch)";
      return notFound("ParentNotFound", `parent branch ${parent} not found in project ${spec.projectId}`);
    }
    return err;
  }

  /** Look again just after the platform's expiry; while not usable, on the next poll tick. */
  observeAfterMs(pass: BrPass, branch: Observed): number | undefined {
    if (!rules.usable(branch)) return nextPoll(this.pollMs);
    if (branch.expiresAt === undefined) return undefined;
    return Math.max(Date.parse(branch.expiresAt) - pass.now().getTime(), 0) + 1_000;
  }

  /** The parent's id (undefined: the default branch); a name is looked up in the project's list. */
  private async parentId(pass: BrPass): Promise<string | undefined> {
    const { branchName, branchId } = pass.spec.parent ?? {};
    if (branchName === undefined) return branchId;
    const named = (list: readonly Observed[]) => list.find((b) => b.name === branchName);
    const found = await lookUp(pass.obj, this.resyncMs, branches(pass), named);
    if (found) return found.id;
    throw notFound("ParentNotFound", `no branch named ${branchName} in project ${pass.spec.projectId}`);
  }
}

/** A name another branch holds: Stalled until the spec changes, looked at again now and then. */
function nameTaken(message: string): Problem {
  return new Problem("BranchNameTaken", message, { retry: { after: Delay.conflict }, stalled: true });
}
