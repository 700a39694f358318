// The Branch's four verbs. `observe` finds the branch in the project's shared snapshot (with its
// roles and databases when unknown) and names the one change its plan says (plan.ts); `create`
// makes it from its parent with its owner mark (and, where a ComputeEndpoint rides along, that
// endpoint: carried.ts); `update` makes the change; `delete` deletes it. A branch gone since it was
// recorded is reported, never recreated.
import type { BranchSpec, BranchStatus, MaskingRule } from "../../api/branch.ts";
import { restoredFromParentAtAnnotation } from "../../api/group.ts";
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  UnprocessableError,
  type MaskingRule as PlatformMaskingRule,
  type PlatformClient,
} from "../../platform/index.ts";
import { annotatedMark, ownerAnnotation } from "../managed/installation.ts";
import type { Adapter, Answer, Carried, Observation, Pass, Verdict } from "../managed/kind.ts";
import { nextPoll } from "../managed/polling.ts";
import { Refusal, invalidSpec, outside } from "../managed/refusal.ts";
import { lookUp } from "../operations/looks.ts";
import { inProject, mutation } from "../operations/project.ts";
import { maskedReady, maskingStep, rulesDigest, scheduleStep, type DataStep } from "./data.ts";
import * as rules from "./plan.ts";

type S = BranchStatus;
type BrPass = Pass<BranchSpec, S, PlatformClient>;
type Observed = rules.ObservedBranch;

/** The project's branch list, as old as `maxAgeMs` allows (lookUp: a shared snapshot). */
const branches = (pass: BrPass) => (maxAgeMs: number) =>
  pass.client.branchSnapshot(pass.spec.projectId, { maxAgeMs });

/** A change of the branch, or of what it keeps of its data (masking, backup schedule). */
export type Step = rules.BranchStep | DataStep;

export class Branches implements Adapter<BranchSpec, S, Observed, Step, PlatformClient> {
  private readonly pollMs: number;
  private readonly resyncMs: number;

  constructor(options: { pollIntervalMs?: number | undefined; resyncPeriodMs?: number | undefined }) {
    this.pollMs = options.pollIntervalMs ?? 5_000;
    this.resyncMs = options.resyncPeriodMs ?? 600_000;
  }

  async observe(pass: BrPass): Promise<Observation<Observed, S, Step>> {
    const branch = await inProject(pass, pass.spec.projectId, () => this.find(pass));
    if (!branch) {
      // Recorded and gone: never recreated (plan.ts says why).
      if (pass.status.branchId !== undefined && !pass.deleting) throw rules.vanished(pass.status, pass.now());
      return { exists: false };
    }
    const found = {
      exists: true as const,
      object: branch,
      id: branch.id,
      status: rules.branchStatus(branch, pass),
      ready: ready(branch),
      marks: branch.annotations,
      lookAgainMs: this.lookAgainMs(pass, branch),
    };
    const next = rules.nextStep(pass, branch);
    if (next || pass.deleting || !rules.usable(branch)) return { ...found, next };
    return this.observeData(pass, branch, found);
  }

  /** Its masking and backup schedule, where the spec declares them: the change due, or what they show. */
  private async observeData<O extends Observation<Observed, S, Step> & { exists: true }>(
    pass: BrPass,
    branch: Observed,
    found: O,
  ): Promise<O> {
    const { client, spec, signal } = pass;
    let observed = found;
    if (spec.masking) {
      const [shown, anonymized] = await Promise.all([
        client.getMaskingRules(spec.projectId, branch.id, { signal }),
        client.anonymizedStatus(spec.projectId, branch.id, { signal }),
      ]);
      if (anonymized.state === "error" || anonymized.state === "initialization_error") {
        throw outside(
          "MaskingFailed",
          `masking the branch's data failed: ${anonymized.statusMessage ?? anonymized.state}`,
        );
      }
      const masking = {
        state: anonymized.state,
        message: anonymized.statusMessage,
        maskedColumns: anonymized.lastRun?.maskedColumns,
        appliedRules: pass.status.masking?.appliedRules,
      };
      observed = { ...observed, status: { ...observed.status, masking } };
      const step = maskingStep(spec.masking.rules.map(toPlatformRule), shown, pass.status, anonymized);
      if (step) return { ...observed, next: step };
      const waiting = maskedReady(anonymized);
      if (waiting) {
        return { ...observed, ready: ["False", "Masking", waiting[1]], lookAgainMs: nextPoll(this.pollMs) };
      }
    }
    if (spec.backupSchedule) {
      const schedule = await client.getBackupSchedule(spec.projectId, branch.id, { signal });
      const step = scheduleStep(spec, schedule);
      if (step) return { ...observed, next: step };
    }
    return observed;
  }

  async create(pass: BrPass, carried?: Carried): Promise<Answer<S>> {
    const { spec, obj } = pass;
    const problem = rules.expiryProblem(spec.expiresAt, pass.now());
    if (problem) throw invalidSpec(problem);
    const snapshotId = spec.parent?.snapshotId;
    const parentId = snapshotId === undefined ? await this.parentId(pass) : undefined;
    const name = rules.desiredName(spec, pass.mark);
    const body = {
      parentId,
      name,
      protected: spec.protected,
      expiresAt: rules.creationExpiry(spec, pass.now()),
      parentTimestamp: spec.parent?.timestamp,
      parentLsn: spec.parent?.lsn,
      initSource: spec.initSource,
      // The owner mark: whose it is after a lost answer or status, a restore, to other installations.
      annotations: { [ownerAnnotation]: pass.mark, ...carried?.marks },
      ...(carried?.body as object), // what the create makes for a child (its endpoint)
    };
    try {
      const created =
        snapshotId !== undefined
          ? // A snapshot's data as a new branch; the restore takes no annotations: its name (the
            // owner mark where the spec names none) finds it after a lost answer.
            await pass.client.restoreSnapshot(spec.projectId, snapshotId, { name }, mutation(pass))
          : spec.masking
            ? await pass.client.createAnonymizedBranch(
                spec.projectId,
                {
                  branch: body,
                  maskingRules: spec.masking.rules.map(toPlatformRule),
                  startAnonymization: true,
                },
                mutation(pass),
              )
            : await pass.client.createBranch(spec.projectId, body, mutation(pass));
      const from =
        snapshotId !== undefined
          ? `snapshot ${snapshotId}`
          : `${parentId ?? "the default branch"}${spec.parent?.timestamp ? ` as of ${spec.parent.timestamp}` : spec.parent?.lsn ? ` at ${spec.parent.lsn}` : ""}`;
      return {
        status: {
          ...rules.branchStatus(created.branch, pass),
          // Created from the parent: an annotation already there asks for no reset.
          restoredFromParentAt: obj.metadata.annotations?.[restoredFromParentAtAnnotation],
          // Made masked: its rules are the ones applied.
          ...(spec.masking && {
            masking: {
              state: "anonymizing",
              appliedRules: rulesDigest(spec.masking.rules.map(toPlatformRule)),
            },
          }),
        },
        operations: created.operations,
        message: `created branch ${created.branch.id} from ${from}${spec.initSource === "schema-only" ? " (schema only)" : ""}${spec.masking ? " with its masking rules" : ""}`,
      };
    } catch (err) {
      throw createRefused(err, spec);
    }
  }

  async update(pass: BrPass, next: Step, { id }: Observed): Promise<Answer<S>> {
    const { client, spec } = pass;
    const [projectId, options] = [spec.projectId, mutation(pass)];
    try {
      switch (next.change) {
        case "maskingRules":
          await client.updateMaskingRules(projectId, id, next.rules, options);
          return {};
        case "anonymize": {
          const run = await client.anonymize(projectId, id, options);
          return {
            status: { masking: { state: run.state, message: run.statusMessage, appliedRules: next.applies } },
          };
        }
        case "backupSchedule":
          await client.setBackupSchedule(projectId, id, next.schedule, options);
          return {};
        case "restore": {
          const result = await client.restoreBranch(
            projectId,
            id,
            { sourceBranchId: next.parentId },
            options,
          );
          // Its roles and databases are the parent's now: looked at again once the restore ends.
          const { restoredFromParentAt } = next;
          const status = { restoredFromParentAt, roles: undefined, databases: undefined };
          return {
            status: { ...rules.branchStatus(result.branch, pass), ...status },
            operations: result.operations,
          };
        }
        case "update": {
          const result = await client.updateBranch(projectId, id, next.patch, options);
          return { status: rules.branchStatus(result.branch, pass), operations: result.operations };
        }
        // An answer of operations only: what the branch then has is read back on the next pass.
        case "createRole":
          return await client.createRole(projectId, id, next.name, options);
        case "createDatabase": {
          const database = { name: next.name, ownerName: next.owner };
          return await client.createDatabase(projectId, id, database, options);
        }
      }
    } catch (err) {
      if (next.change === "restore" && err instanceof BadRequestError) {
        // A branch with children needs its old state kept under a new name, which this does not do.
        const why =
          "a branch with child branches cannot be reset from its parent here: delete its children first";
        throw new Refusal(
          "RestoreRefused",
          "outside",
          `the platform refused to reset the branch from its parent: ${err.message} (${why})`,
        );
      }
      if (next.change === "update" && err instanceof ConflictError)
        throw nameTaken(`project ${spec.projectId}: ${err.message}`);
      throw err;
    }
  }

  async delete(pass: BrPass, branch: Observed): Promise<Answer<S> | "gone"> {
    try {
      const result = await pass.client.deleteBranch(pass.spec.projectId, branch.id, mutation(pass));
      // 204: it did not exist any more.
      return result ? { operations: result.operations, message: `deleted branch ${branch.id}` } : "gone";
    } catch (err) {
      if (err instanceof NotFoundError) return "gone";
      if (!(err instanceof UnprocessableError)) throw err;
      const why = branch.protected
        ? "it is protected: set spec.protected to false, or deletionPolicy to Orphan"
        : `${err.message}; if it has child branches, delete them first, or set deletionPolicy to Orphan to keep it`;
      throw outside("DeleteRefused", `the platform refused to delete branch ${branch.id}: ${why}`);
    }
  }

  /** By id (adopted or recorded), else by owner mark or name; with its content when unknown. */
  private async find(pass: BrPass): Promise<Observed | undefined> {
    const { spec, status, client, mark } = pass;
    const id = spec.branchId ?? status.branchId;
    const name = rules.desiredName(spec, mark);
    // This resource's own: its owner mark, or (made before marks, or a snapshot that recorded a
    // create answer without annotations) the name it gives; `k8s-<uid>` was an earlier version's.
    const ours = (b: Observed) =>
      annotatedMark(b) === mark || b.name === mark || b.name === `k8s-${pass.obj.metadata.uid ?? ""}`;
    const match = (list: readonly Observed[]) =>
      id
        ? list.find((b) => b.id === id)
        : (list.find((b) => annotatedMark(b) === mark) ?? list.find((b) => b.name === name));
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

  /** Look again just after the platform's expiry; while not usable, on the next poll tick. */
  private lookAgainMs(pass: BrPass, branch: Observed): number | undefined {
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
    throw outside("ParentNotFound", `no branch named ${branchName} in project ${pass.spec.projectId}`);
  }
}

function ready(branch: Observed): Verdict {
  const state = `branch ${branch.id} is ${branch.currentState}`;
  return rules.usable(branch) ? ["True", "Available", state] : ["False", "BranchState", state];
}

/** The platform's refusals of a create, in the resource's own terms. */
function createRefused(err: unknown, spec: BranchSpec): unknown {
  if (err instanceof ConflictError) return nameTaken(`project ${spec.projectId}: ${err.message}`);
  if (err instanceof NotFoundError) {
    const parent =
      spec.parent?.snapshotId ?? spec.parent?.branchId ?? spec.parent?.branchName ?? "(the default branch)";
    return outside("ParentNotFound", `parent ${parent} not found in project ${spec.projectId}`);
  }
  // A point outside the parent's restore window, a masking rule naming a column or function that
  // is not there: the spec as it stands (the platform's words name the field and the window).
  if (err instanceof BadRequestError || err instanceof UnprocessableError) {
    const what = spec.parent?.timestamp
      ? "spec.parent.timestamp"
      : spec.parent?.lsn
        ? "spec.parent.lsn"
        : spec.masking
          ? "spec.masking.rules"
          : "the branch";
    return invalidSpec(`the platform refused ${what}: ${err.message}`);
  }
  return err;
}

/** A masking rule as the platform takes it. */
export function toPlatformRule(rule: MaskingRule): PlatformMaskingRule {
  return {
    databaseName: rule.database,
    schemaName: rule.schema,
    tableName: rule.table,
    columnName: rule.column,
    maskingFunction: rule.function,
    maskingValue: rule.value,
  };
}

/** A name another branch holds: Stalled until the spec or the other branch changes. */
function nameTaken(message: string): Refusal {
  return outside("BranchNameTaken", message);
}
