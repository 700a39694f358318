// The Snapshot's four verbs. `observe` finds the snapshot in its project's list (by adopted or
// recorded id, or after a lost create by the name it was sent with, on the same branch, taken no
// earlier than that create; with none of these there is nothing to find and no list is asked); `create` records that name first, then takes it; `update` renames it
// or changes its expiry; `delete` deletes it. Gone since it was recorded: reported, never retaken.
import type { SnapshotSpec, SnapshotStatus } from "../../api/snapshot.ts";
import {
  BadRequestError,
  NotFoundError,
  UnprocessableError,
  type PlatformClient,
  type Snapshot,
} from "../../platform/index.ts";
import type { Adapter, Answer, Observation, Pass, Verdict } from "../managed/kind.ts";
import { invalidSpec, outside } from "../managed/refusal.ts";
import { inProject, mutation } from "../operations/project.ts";
import * as rules from "./plan.ts";

type S = SnapshotStatus;
type SnPass = Pass<SnapshotSpec, S, PlatformClient>;

/** How long before its create's record a snapshot found after a lost answer may have been taken (clocks differ). */
const clockSkewMs = 60_000;

/** Snapshots kept from their create's answer at most (a bounded map: what it holds saves a list). */
const answersKept = 10_000;

export class Snapshots implements Adapter<SnapshotSpec, S, Snapshot, rules.SnapshotStep, PlatformClient> {
  /**
   * The snapshot each resource's create answered (by the resource's uid), for its first look once
   * the create's operation has ended: the platform's own answer, so that look reads no list. Used
   * once; every later look lists.
   */
  private readonly answered = new Map<string, Snapshot>();

  async observe(pass: SnPass): Promise<Observation<Snapshot, S, rules.SnapshotStep>> {
    const { spec, status } = pass;
    const projectId = spec.projectId;
    // Nothing adopted or recorded: no create was sent (its intent, the name, is saved before it),
    // so the project's list has nothing of this resource's and is not asked for.
    if (spec.snapshotId === undefined && status.snapshotId === undefined && status.creationName === undefined)
      return { exists: false };
    const snapshot = this.fromAnswer(pass) ?? (await this.listed(pass, projectId));
    if (!snapshot) {
      if (status.snapshotId !== undefined && spec.snapshotId === undefined && !pass.deleting) {
        throw rules.vanished(status, pass.now());
      }
      return { exists: false };
    }
    return {
      exists: true,
      object: snapshot,
      id: snapshot.id,
      status: { ...rules.snapshotStatus(snapshot), creationName: undefined, creationStartedAt: undefined },
      ready: ready(snapshot),
      next: pass.deleting ? undefined : rules.plan(spec, snapshot, pass.mark, pass.now()),
      lookAgainMs: lookAgainMs(snapshot, pass.now()),
    };
  }

  async create(pass: SnPass): Promise<Answer<S>> {
    const { spec } = pass;
    const branchId = spec.branchId ?? "";
    const expiresAt = rules.creationExpiry(spec, pass.now());
    const problem = rules.expiryProblem(expiresAt, pass.now());
    if (problem) throw invalidSpec(problem);
    const name = rules.desiredName(spec, pass.mark) ?? pass.mark;
    // Intent first: a create whose answer is lost is found by its name, never taken twice.
    await pass.save({ creationName: name, creationStartedAt: pass.now().toISOString() });
    try {
      const created = await pass.client.createSnapshot(
        spec.projectId,
        branchId,
        { name, expiresAt, timestamp: spec.at?.timestamp, lsn: spec.at?.lsn },
        mutation(pass),
      );
      if (this.answered.size >= answersKept) this.answered.clear();
      this.answered.set(pass.obj.metadata.uid ?? "", created.snapshot);
      return {
        status: rules.snapshotStatus(created.snapshot),
        operations: created.operations,
        message: `took snapshot ${created.snapshot.id} of branch ${branchId}${spec.at ? ` at ${spec.at.timestamp ?? spec.at.lsn ?? ""}` : ""}`,
      };
    } catch (err) {
      if (err instanceof NotFoundError)
        throw outside(
          "BranchNotFound",
          `spec.branchId: branch ${branchId} not found in project ${spec.projectId}`,
        );
      // A point outside the branch's restore window, or a branch that is no root: the spec as it stands.
      if (err instanceof BadRequestError || err instanceof UnprocessableError)
        throw invalidSpec(`the platform refused the snapshot: ${err.message}`);
      throw err;
    }
  }

  async update(pass: SnPass, step: rules.SnapshotStep, snapshot: Snapshot): Promise<Answer<S>> {
    const updated = await pass.client.updateSnapshot(
      pass.spec.projectId,
      snapshot.id,
      step.patch,
      mutation(pass),
    );
    return { status: rules.snapshotStatus(updated) };
  }

  async delete(pass: SnPass, snapshot: Snapshot): Promise<Answer<S> | "gone"> {
    try {
      const result = await pass.client.deleteSnapshot(pass.spec.projectId, snapshot.id, mutation(pass));
      return { operations: result.operations, message: `deleted snapshot ${snapshot.id}` };
    } catch (err) {
      if (err instanceof NotFoundError) return "gone";
      throw err;
    }
  }

  /** The create's answer, once, where it is the snapshot the status recorded (not while deleting). */
  private fromAnswer(pass: SnPass): Snapshot | undefined {
    const uid = pass.obj.metadata.uid ?? "";
    const answer = this.answered.get(uid);
    this.answered.delete(uid);
    return answer !== undefined && !pass.deleting && answer.id === pass.status.snapshotId
      ? answer
      : undefined;
  }

  /** The snapshot in its project's list. */
  private async listed(pass: SnPass, projectId: string): Promise<Snapshot | undefined> {
    const list = await inProject(pass, projectId, () =>
      pass.client.listSnapshots(projectId, { signal: pass.signal }),
    );
    return list === undefined ? undefined : this.find(pass, list);
  }

  /** By adopted or recorded id; after a lost create, by the name it was sent with, on its branch, taken since. */
  private find(pass: SnPass, list: readonly Snapshot[]): Snapshot | undefined {
    const { spec, status } = pass;
    const id = spec.snapshotId ?? status.snapshotId;
    if (id !== undefined) return list.find((s) => s.id === id);
    const name = status.creationName;
    if (name === undefined) return undefined;
    const since = Date.parse(status.creationStartedAt ?? "") - clockSkewMs;
    return list.find(
      (s) =>
        s.name === name &&
        (spec.branchId === undefined || s.sourceBranchId === spec.branchId) &&
        !(Date.parse(s.createdAt) < since),
    );
  }
}

function ready(snapshot: Snapshot): Verdict {
  return [
    "True",
    "Available",
    `snapshot ${snapshot.id} keeps branch ${snapshot.sourceBranchId ?? ""} as of ${snapshot.timestamp ?? snapshot.createdAt}`,
  ];
}

/** Look again just after the platform's expiry. */
function lookAgainMs(snapshot: Snapshot, now: Date): number | undefined {
  if (snapshot.expiresAt === undefined) return undefined;
  return Math.max(Date.parse(snapshot.expiresAt) - now.getTime(), 0) + 1_000;
}
