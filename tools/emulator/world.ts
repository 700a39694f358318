// The emulated world: records with their indexes, the operations that change
// them over time, and snapshot/restore for the state file. Time only moves in
// `advance(now)`, called before every request, which applies every due event
// at its own emulated time.
import type { Clock } from "./clock.ts";
import { digestApiKey, newOperationId } from "./ids.ts";
import type {
  AccountRecord,
  ApiKeyRecord,
  BranchRecord,
  DatabaseRecord,
  DeletedProjectRecord,
  EndpointRecord,
  EndpointState,
  OperationAction,
  OperationFaultPlan,
  MaskingRule,
  OperationRecord,
  ProjectRecord,
  SnapshotRecord,
  WorldState,
} from "./model.ts";
import { settledStatuses } from "./model.ts";
import { anonymizeWhenReady, initializationFailed } from "./anonymized.ts";
import { deleteBranch } from "./branches.ts";
import { deleteSnapshot } from "./snapshots.ts";
import { OperationDurations, type DurationSettings } from "./durations.ts";
import { PlatformError } from "./errors.ts";
import { OperationLocks, type LockScope } from "./locks.ts";
import { seededRandom } from "./random.ts";
import { Timeline, type WorldEvent } from "./timeline.ts";

export interface WorldOptions extends DurationSettings {
  clock: Clock;
  /** Source of the duration jitter (default Math.random; seeded by the emulator's `randomSeed`). */
  random?: () => number;
  /** Interval of the control plane's check_availability operations; 0 disables them (default 0). */
  checkAvailabilityIntervalMs?: number;
  /** Operations kept per project; the oldest finished ones are dropped beyond it (default 2000). */
  maxOperationsPerProject?: number;
  /** How a new operation fails, if it does (the faults' hook). */
  operationFault?: (operation: OperationRecord) => OperationFaultPlan | undefined;
  /**
   * How long a new operation stays out of the project's operations list (default 0). The
   * platform's list is eventually consistent: right after a request it may not show the
   * operations the request returned, while reading one by id does.
   */
  operationsListLagMs?: number;
  /**
   * What a running operation locks against new mutations (423): the whole `project` (default)
   * or only its `branch`. The platform "limits overlapping operations per project" and nothing
   * public says two branches of one project may change at once, so the project is the default;
   * `branch` is an optimistic variant, for comparing how a client would fare if it were so.
   */
  lockScope?: LockScope;
  /** Told when a branch's data must be copied, moved or dropped (the emulator's Postgres). */
  data?: BranchDataEvents;
  /** The emulator's seed: masked values are drawn from it (default 0). */
  randomSeed?: number;
}

/** Where a new branch's (or a snapshot's) data comes from: a branch, now or at a past point. */
export interface BranchSource {
  /** The point of the branch's history (emulated ms); absent: its data now. */
  at?: number;
  /** Its schema without a row (`init_source: "schema-only"`). */
  schemaOnly?: boolean;
  /** The databases the copy has (its catalog); the source's others are left out. */
  databases?: readonly string[];
}

/** A column of a database's tables, as masking rules name it. */
export interface ColumnInfo {
  schema: string;
  table: string;
  column: string;
  /** Its type as Postgres prints it (`format_type`). */
  type: string;
  /** Part of a foreign key: the platform masks the key it references instead. */
  foreignKey: boolean;
}

/**
 * What happens to a branch's data beside its records. The records (roles, databases) are
 * the world's; the rows are the listener's, which copies a parent's data to a child.
 */
export interface BranchDataEvents {
  /** A child branch starts with its parent's data, as it is now or was at a point. */
  branchCreated(branch: BranchRecord, parent: BranchRecord, source: BranchSource): void;
  /** A snapshot keeps the branch's data, as it is now or was at a point. */
  snapshotTaken(snapshotId: string, branch: BranchRecord, source: BranchSource): void;
  snapshotDeleted(snapshotId: string): void;
  /** A branch a snapshot's restore makes starts with the snapshot's data. */
  branchFromSnapshot(branch: BranchRecord, snapshotId: string): void;
  /** The columns of a database of the branch (where masking rules may point). */
  columns(branch: BranchRecord, database: DatabaseRecord): Promise<ColumnInfo[]>;
  /** Applies masking rules to the branch's data; answers how many columns were masked. */
  mask(branch: BranchRecord, rules: readonly MaskingRule[], random: () => number): Promise<number>;
  /** The branch's current data moves to `preserved` (a restore's `preserve_under_name`). */
  branchPreserved(branch: BranchRecord, preserved: BranchRecord): void;
  /** The branch's data is replaced by a copy of the source's, as it is now or was at a point. */
  branchRestored(branch: BranchRecord, source: BranchRecord, from: BranchSource): void;
  branchDeleted(branch: BranchRecord): void;
  databaseRenamed(branch: BranchRecord, from: string, to: string): void;
  databaseDeleted(branch: BranchRecord, name: string): void;
  /**
   * An `apply_config` finished on the endpoint (a role or database change, a password reset):
   * the platform drops the connections to its compute.
   */
  configApplied(endpointId: string): void;
  /** The endpoint is gone: nothing answers at its host any more. */
  endpointRemoved(endpointId: string): void;
}

export type { LockScope };

/** One operation of a request, in the order they run. */
export interface OperationSpec {
  action: OperationAction;
  branchId?: string;
  endpointId?: string;
}

const defaultSuspendTimeoutSeconds = 300;
/** How long cancelling an operation that never ran takes (emulated ms). */
const cancellationMs = 100;

export class World {
  readonly clock: Clock;
  /** In seed order; the first is the one the single-account seed format describes. */
  readonly accounts = new Map<string, AccountRecord>();
  nextApiKeyId = 1_000_001;
  nextDatabaseId = 1_000_001;
  readonly apiKeysById = new Map<number, ApiKeyRecord>();
  readonly apiKeysByDigest = new Map<string, ApiKeyRecord>();
  readonly projects = new Map<string, ProjectRecord>();
  readonly branches = new Map<string, BranchRecord>();
  readonly endpoints = new Map<string, EndpointRecord>();
  /** Endpoints of each project, in creation order. */
  readonly endpointsByProject = new Map<string, Map<string, EndpointRecord>>();
  readonly operations = new Map<string, OperationRecord>();
  /** Operations of each project, oldest first. */
  readonly operationsByProject = new Map<string, OperationRecord[]>();
  /** Deleted projects within their recovery window, by id: their records, out of every index above. */
  readonly deletedProjects = new Map<string, DeletedProjectRecord>();
  /** The projects' snapshots, by id. */
  readonly snapshots = new Map<string, SnapshotRecord>();
  /** What unsettled operations hold against new mutations, by project (or branch, in that scope). */
  private readonly locks: OperationLocks;

  get lockScope(): LockScope {
    return this.locks.scope;
  }
  /** When each active endpoint suspends, and when its one pending timeline event fires (never later). */
  private readonly autosuspendAt = new Map<string, number>();
  private readonly autosuspendEventAt = new Map<string, number>();
  private readonly timeline = new Timeline();
  private lastMicros = 0;
  private nextCheckAvailabilityAt: number | undefined;
  /** Draws each run's duration and keeps the per-project record of what was drawn. */
  readonly durations: OperationDurations;
  private readonly checkInterval: number;
  private readonly maxOperations: number;
  private readonly operationFault: (operation: OperationRecord) => OperationFaultPlan | undefined;
  readonly operationsListLagMs: number;
  readonly data: BranchDataEvents | undefined;
  /** Each masking run's seed, drawn in turn from the emulator's: the same runs mask alike. */
  readonly maskingSeeds: () => number;
  /** Operations created since start, retained or not. */
  operationsCreated = 0;
  /** Bumped on every change of what endpoints show, so their serialised views can be cached. */
  version = 0;

  constructor(options: WorldOptions) {
    this.clock = options.clock;
    this.durations = new OperationDurations(options, options.random ?? Math.random);
    this.checkInterval = options.checkAvailabilityIntervalMs ?? 0;
    this.maxOperations = options.maxOperationsPerProject ?? 2000;
    this.operationFault = options.operationFault ?? (() => undefined);
    this.operationsListLagMs = options.operationsListLagMs ?? 0;
    this.locks = new OperationLocks(options.lockScope ?? "project");
    this.data = options.data;
    // A stream of its own, so masking never shifts the durations or fault rolls drawn.
    const seeds = seededRandom((options.randomSeed ?? 0) ^ 0x5bd1e995);
    this.maskingSeeds = () => Math.floor(seeds() * 2 ** 32);
  }

  /** Starts the periodic check_availability operations (if enabled), the first one at `at`. */
  startAvailabilityChecks(at: number = this.clock.now() + this.checkInterval): void {
    if (this.checkInterval > 0) this.scheduleCheckAvailability(at);
  }

  // --- records -------------------------------------------------------------

  addAccount(account: AccountRecord): void {
    if (this.accounts.has(account.id)) throw new Error(`account ${account.id} is seeded twice`);
    this.accounts.set(account.id, account);
  }

  /** The account a key or project names (every record names one that exists). */
  account(id: string): AccountRecord {
    const account = this.accounts.get(id);
    if (!account) throw new Error(`no account ${id}`);
    return account;
  }

  addApiKey(accountId: string, name: string, value: string, now: number): ApiKeyRecord {
    const key: ApiKeyRecord = {
      id: this.nextApiKeyId++,
      accountId,
      name,
      digest: digestApiKey(value),
      createdAt: now,
      lastUsedFromAddr: "",
      revoked: false,
    };
    this.apiKeysById.set(key.id, key);
    this.apiKeysByDigest.set(key.digest, key);
    this.changed();
    return key;
  }

  addProject(project: ProjectRecord): void {
    this.projects.set(project.id, project);
    this.endpointsByProject.set(project.id, new Map());
    this.operationsByProject.set(project.id, []);
    this.changed();
  }

  addBranch(branch: BranchRecord): void {
    this.branches.set(branch.id, branch);
    this.changed();
  }

  removeBranch(branch: BranchRecord): void {
    this.branches.delete(branch.id);
    this.data?.branchDeleted(branch);
    this.changed();
  }

  /** Arms the platform's deletion of a branch at its `expires_at` (a later change re-arms it). */
  scheduleBranchExpiry(branch: BranchRecord): void {
    if (branch.expiresAt !== undefined) {
      this.timeline.push({ at: branch.expiresAt, kind: "branch-expiry", branchId: branch.id });
    }
  }

  private expireBranch(branchId: string, at: number): void {
    const branch = this.branches.get(branchId);
    if (!branch || branch.expiresAt !== at) return; // deleted, or its expiry moved
    try {
      deleteBranch(this, branch, at, { expired: true });
    } catch (err) {
      if (!(err instanceof PlatformError)) throw err;
      // Busy: the background job tries again a second later. Refused (it has children): it stays.
      if (err.status === 423) {
        branch.expiresAt = at + 1000;
        this.scheduleBranchExpiry(branch);
      }
    }
  }

  /** Arms the platform's deletion of a snapshot at its `expires_at` (a later change re-arms it). */
  scheduleSnapshotExpiry(snapshot: SnapshotRecord): void {
    if (snapshot.expiresAt !== undefined) {
      this.timeline.push({ at: snapshot.expiresAt, kind: "snapshot-expiry", snapshotId: snapshot.id });
    }
  }

  private expireSnapshot(snapshotId: string, at: number): void {
    const snapshot = this.snapshots.get(snapshotId);
    if (!snapshot || snapshot.expiresAt !== at) return; // deleted, or its expiry moved
    try {
      deleteSnapshot(this, snapshot, at);
    } catch (err) {
      if (!(err instanceof PlatformError) || err.status !== 423) throw err;
      // Busy: the background job tries again a second later.
      snapshot.expiresAt = at + 1000;
      this.scheduleSnapshotExpiry(snapshot);
    }
  }

  addEndpoint(endpoint: EndpointRecord): void {
    this.endpoints.set(endpoint.id, endpoint);
    this.endpointsByProject.get(endpoint.projectId)?.set(endpoint.id, endpoint);
    this.changed();
  }

  removeEndpoint(endpoint: EndpointRecord): void {
    this.endpoints.delete(endpoint.id);
    this.endpointsByProject.get(endpoint.projectId)?.delete(endpoint.id);
    this.autosuspendAt.delete(endpoint.id);
    this.data?.endpointRemoved(endpoint.id);
    this.changed();
  }

  /**
   * Takes a project and everything in it out of the world (every route answers 404 for it), kept
   * until `purgeAt` for a recovery. Its computes stop and their ports close; its branches' data
   * stays until the purge. The `delete_tenant` it runs is recorded finished: nobody can read the
   * project's operations before a recovery.
   */
  deleteProject(projectId: string, now: number, purgeAt: number): DeletedProjectRecord {
    const project = this.projects.get(projectId);
    if (!project) throw new Error(`no project ${projectId}`);
    const tenant = this.newOperation(projectId, { action: "delete_tenant" }, now);
    this.settle(tenant, "finished", now);
    const operations = this.operationsByProject.get(projectId) ?? [];
    for (const op of operations) {
      // A check_availability (which holds no lock), or in the branch lock scope a branch's
      // operation: it ends with the project.
      if (!settledStatuses.has(op.status)) this.settle(op, "cancelled", now);
      this.operations.delete(op.id);
    }
    const endpoints = [...(this.endpointsByProject.get(projectId)?.values() ?? [])];
    for (const endpoint of endpoints) {
      this.removeEndpoint(endpoint);
      endpoint.currentState = "idle";
      delete endpoint.pendingState;
    }
    const branches = [...this.branches.values()].filter((b) => b.projectId === projectId);
    for (const branch of branches) this.branches.delete(branch.id);
    const snapshots = [...this.snapshots.values()].filter((s) => s.projectId === projectId);
    for (const snapshot of snapshots) this.snapshots.delete(snapshot.id);
    this.projects.delete(projectId);
    this.endpointsByProject.delete(projectId);
    this.operationsByProject.delete(projectId);
    const deleted: DeletedProjectRecord = {
      project,
      deletedAt: now,
      purgeAt,
      branches,
      endpoints,
      operations,
      snapshots,
    };
    this.deletedProjects.set(projectId, deleted);
    this.timeline.push({ at: purgeAt, kind: "project-purge", projectId });
    this.changed();
    return deleted;
  }

  /** Brings a deleted project back as it was, its computes idle. */
  recoverProject(projectId: string, now: number): DeletedProjectRecord {
    const deleted = this.deletedProjects.get(projectId);
    if (!deleted) throw new Error(`no deleted project ${projectId}`);
    this.deletedProjects.delete(projectId);
    deleted.project.updatedAt = now;
    this.addProject(deleted.project);
    for (const branch of deleted.branches) {
      this.addBranch(branch);
      this.scheduleBranchExpiry(branch);
    }
    for (const endpoint of deleted.endpoints) this.addEndpoint(endpoint);
    for (const snapshot of deleted.snapshots ?? []) {
      this.snapshots.set(snapshot.id, snapshot);
      this.scheduleSnapshotExpiry(snapshot);
    }
    for (const op of deleted.operations) this.operations.set(op.id, op);
    this.operationsByProject.set(projectId, deleted.operations);
    return deleted;
  }

  /** The recovery window has passed: the deleted project's data is gone for good. */
  private purgeProject(projectId: string, at: number): void {
    const deleted = this.deletedProjects.get(projectId);
    if (!deleted || deleted.purgeAt !== at) return; // recovered (and maybe deleted again) since
    this.deletedProjects.delete(projectId);
    for (const branch of deleted.branches) this.data?.branchDeleted(branch);
    for (const snapshot of deleted.snapshots ?? []) this.data?.snapshotDeleted(snapshot.id);
    this.changed();
  }

  endpointsOfBranch(branchId: string): EndpointRecord[] {
    const branch = this.branches.get(branchId);
    if (!branch) return [];
    const all = this.endpointsByProject.get(branch.projectId)?.values() ?? [];
    return [...all].filter((e) => e.branchId === branchId);
  }

  /** Marks a record as changed: bumps its `updatedAt` and the world's version. */
  touch(endpoint: EndpointRecord, now: number): void {
    endpoint.updatedAt = now;
    this.changed();
  }

  changed(): void {
    this.version++;
  }

  // --- operations ----------------------------------------------------------

  /** 423 while an unsettled operation holds a lock this mutation of these branches needs. */
  assertUnlocked(projectId: string, branchIds: readonly string[]): void {
    this.locks.assertUnlocked(projectId, branchIds);
  }

  /**
   * Starts the operations of one request: the first runs now, each next one
   * when its predecessor finishes. `pendingState` is what the endpoint shows
   * until the last one is done.
   */
  startOperations(
    projectId: string,
    specs: OperationSpec[],
    now: number,
    pendingState?: EndpointState,
  ): OperationRecord[] {
    const created = specs.map((spec) => this.newOperation(projectId, spec, now));
    created.forEach((op, i) => {
      const next = created[i + 1];
      if (next) op.nextId = next.id;
    });
    const first = created[0];
    const endpointId = specs[0]?.endpointId;
    const endpoint = endpointId === undefined ? undefined : this.endpoints.get(endpointId);
    // Before the first runs: a chain of skipped operations ends at once and clears it again.
    if (endpoint && pendingState && first) endpoint.pendingState = pendingState;
    if (first) this.run(first, now);
    this.trimOperations(projectId);
    this.changed();
    return created;
  }

  private newOperation(projectId: string, spec: OperationSpec, now: number): OperationRecord {
    // Microsecond creation times, strictly increasing, so the cursor never splits ties.
    const micros = Math.max(Math.floor(now * 1000), this.lastMicros + 1);
    this.lastMicros = micros;
    const op: OperationRecord = {
      id: newOperationId(),
      projectId,
      ...(spec.branchId === undefined ? {} : { branchId: spec.branchId }),
      ...(spec.endpointId === undefined ? {} : { endpointId: spec.endpointId }),
      action: spec.action,
      status: "scheduling",
      failuresCount: 0,
      createdMicros: micros,
      updatedAt: now,
    };
    this.operations.set(op.id, op);
    this.operationsByProject.get(projectId)?.push(op);
    this.operationsCreated++;
    this.locks.hold(op, 1);
    return op;
  }

  /**
   * The operation's turn has come (first run, or the platform's retry of a failed run). An
   * operation whose effect is already in place (starting an active endpoint, suspending an idle
   * one) is `skipped`, and the chain goes on.
   */
  private run(op: OperationRecord, now: number): void {
    const endpoint = op.endpointId === undefined ? undefined : this.endpoints.get(op.endpointId);
    if (
      op.failuresCount === 0 &&
      endpoint &&
      ((op.action === "start_compute" && endpoint.currentState === "active") ||
        (op.action === "suspend_compute" && endpoint.currentState === "idle"))
    ) {
      this.settle(op, "skipped", now);
      this.runNext(op, endpoint, now);
      return;
    }
    op.status = "running";
    op.updatedAt = now;
    if (op.failuresCount === 0) {
      const fault = this.operationFault(op);
      if (fault) op.fault = fault;
    }
    op.doneAt = now + this.durations.draw(op.projectId, op.action);
    this.timeline.push({ at: op.doneAt, kind: "operation-due", operationId: op.id });
  }

  /** Ends an operation in a status it never leaves, releasing its hold on the lock. */
  private settle(op: OperationRecord, status: OperationRecord["status"], at: number): void {
    op.status = status;
    op.updatedAt = at;
    this.locks.hold(op, -1);
  }

  /** The end of a running phase: a success, a failure the platform will retry, or a final error. */
  private finish(op: OperationRecord, at: number): void {
    const endpoint = op.endpointId === undefined ? undefined : this.endpoints.get(op.endpointId);
    const fault = op.fault;
    if (fault && op.failuresCount < fault.failures) {
      op.failuresCount++;
      op.error = `${op.action} failed (emulated fault)`;
      if (fault.then === "error" && op.failuresCount === fault.failures) {
        this.settle(op, "error", at);
        this.cancelChain(op, at);
        if (op.action === "create_branch" && op.branchId !== undefined) {
          const branch = this.branches.get(op.branchId);
          if (branch) initializationFailed(this, branch, at);
        }
        if (endpoint) {
          delete endpoint.pendingState;
          this.touch(endpoint, at);
        }
        return;
      }
      // Not final: it keeps its place (and the lock), and its successors keep waiting.
      op.status = "failed";
      op.updatedAt = at;
      // While failed: when the retry comes. Afterwards it stays, as the document's "when the
      // operation was last retried".
      op.retryAt = at + fault.retryDelayMs;
      this.durations.recordRetryWait(op.projectId, fault.retryDelayMs);
      this.timeline.push({ at: op.retryAt, kind: "operation-due", operationId: op.id });
      this.changed();
      return;
    }
    delete op.error;
    this.settle(op, "finished", at);
    if (endpoint) this.applyEffect(op, endpoint, at);
    if (op.action === "apply_config" && op.endpointId !== undefined) this.data?.configApplied(op.endpointId);
    // A new branch, or a new project's default branch, is ready once its timeline exists.
    if (op.action === "create_branch" || op.action === "create_timeline") this.branchReady(op.branchId, at);
    this.runNext(op, endpoint, at);
  }

  private branchReady(branchId: string | undefined, at: number): void {
    const branch = branchId === undefined ? undefined : this.branches.get(branchId);
    if (!branch || branch.currentState !== "init") return;
    branch.currentState = "ready";
    branch.stateChangedAt = at;
    branch.updatedAt = at;
    this.changed();
    anonymizeWhenReady(this, branch, at);
  }

  /**
   * Runs the next operation of the chain. An endpoint's pending state clears when the chain has
   * no more operations for it (a new branch's chain starts several endpoints in turn).
   */
  private runNext(op: OperationRecord, endpoint: EndpointRecord | undefined, at: number): void {
    const next = this.nextOf(op);
    if (
      endpoint &&
      endpoint.pendingState !== undefined &&
      op.action !== "check_availability" &&
      next?.endpointId !== endpoint.id
    ) {
      delete endpoint.pendingState;
      this.touch(endpoint, at);
    }
    if (next) this.run(next, at);
  }

  /** After a final error the rest of the request's chain is cancelled: `cancelling`, then `cancelled`. */
  private cancelChain(op: OperationRecord, at: number): void {
    for (let next = this.nextOf(op); next; next = this.nextOf(next)) {
      const endpoint = next.endpointId === undefined ? undefined : this.endpoints.get(next.endpointId);
      if (endpoint?.pendingState !== undefined) {
        delete endpoint.pendingState;
        this.touch(endpoint, at);
      }
      next.status = "cancelling";
      next.updatedAt = at;
      next.doneAt = at + cancellationMs;
      this.timeline.push({ at: next.doneAt, kind: "operation-due", operationId: next.id });
    }
  }

  /** An operation's phase is due: a run ends, a failed run is retried, a cancellation completes. */
  private due(op: OperationRecord, at: number): void {
    if (op.status === "running" && op.doneAt === at) this.finish(op, at);
    else if (op.status === "failed" && op.retryAt === at) this.run(op, at);
    else if (op.status === "cancelling" && op.doneAt === at) this.settle(op, "cancelled", at);
  }

  private nextOf(op: OperationRecord): OperationRecord | undefined {
    return op.nextId === undefined ? undefined : this.operations.get(op.nextId);
  }

  private applyEffect(op: OperationRecord, endpoint: EndpointRecord, at: number): void {
    if (op.action === "start_compute") {
      endpoint.currentState = "active";
      endpoint.startedAt = at;
      this.recordActivity(endpoint, at);
    } else if (op.action === "suspend_compute") {
      endpoint.currentState = "idle";
      endpoint.suspendedAt = at;
      this.autosuspendAt.delete(endpoint.id);
    } else {
      return;
    }
    this.touch(endpoint, at);
  }

  /** Client activity on an active endpoint: moves `last_active` and restarts the autosuspend delay. */
  recordActivity(endpoint: EndpointRecord, at: number): void {
    endpoint.lastActive = at;
    this.scheduleAutosuspend(endpoint);
    this.changed();
  }

  /** (Re)arms the autosuspend of an active endpoint after a change of activity or delay. */
  scheduleAutosuspend(endpoint: EndpointRecord): void {
    const delay = effectiveSuspendTimeout(endpoint.suspendTimeoutSeconds);
    if (endpoint.currentState !== "active" || delay < 0 || endpoint.lastActive === undefined) {
      this.autosuspendAt.delete(endpoint.id);
      return;
    }
    const at = endpoint.lastActive + delay * 1000;
    this.autosuspendAt.set(endpoint.id, at);
    // Activity only moves the time later, so one pending event per endpoint suffices: it re-arms itself.
    const pending = this.autosuspendEventAt.get(endpoint.id);
    if (pending === undefined || at < pending) this.pushAutosuspend(endpoint.id, at);
  }

  private pushAutosuspend(endpointId: string, at: number): void {
    this.autosuspendEventAt.set(endpointId, at);
    this.timeline.push({ at, kind: "autosuspend", endpointId });
  }

  private autosuspend(endpointId: string, at: number): void {
    if (this.autosuspendEventAt.get(endpointId) !== at) return; // superseded by an earlier event
    this.autosuspendEventAt.delete(endpointId);
    const due = this.autosuspendAt.get(endpointId);
    if (due === undefined) return;
    if (due > at) {
      this.pushAutosuspend(endpointId, due); // activity since: wait until the new time
      return;
    }
    this.autosuspendAt.delete(endpointId);
    const endpoint = this.endpoints.get(endpointId);
    // An endpoint in the middle of a change is suspended once that change settles, if still idle long enough.
    if (!endpoint || endpoint.currentState !== "active" || endpoint.pendingState !== undefined) return;
    this.startOperations(
      endpoint.projectId,
      [{ action: "suspend_compute", branchId: endpoint.branchId, endpointId }],
      at,
      "idle",
    );
  }

  private scheduleCheckAvailability(at: number): void {
    this.nextCheckAvailabilityAt = at;
    this.timeline.push({ at, kind: "check-availability" });
  }

  private checkAvailability(at: number, now: number): void {
    if (this.nextCheckAvailabilityAt !== at) return;
    const checked = new Set<string>();
    for (const endpoint of this.endpoints.values()) {
      if (checked.has(endpoint.branchId)) continue;
      checked.add(endpoint.branchId);
      this.startOperations(
        endpoint.projectId,
        [{ action: "check_availability", branchId: endpoint.branchId, endpointId: endpoint.id }],
        at,
      );
    }
    // After a long pause (a stopped process, a fast clock) skip the missed checks rather than replay them all.
    const next = at + this.checkInterval;
    this.scheduleCheckAvailability(next <= now - this.checkInterval ? now : next);
  }

  /** Applies every event due at `now`, each at its own time. */
  advance(now: number = this.clock.now()): void {
    for (let event = this.timeline.popDue(now); event; event = this.timeline.popDue(now)) {
      this.apply(event, now);
    }
  }

  private apply(event: WorldEvent, now: number): void {
    switch (event.kind) {
      case "operation-due": {
        const op = this.operations.get(event.operationId);
        if (op) this.due(op, event.at);
        break;
      }
      case "autosuspend":
        this.autosuspend(event.endpointId, event.at);
        break;
      case "check-availability":
        this.checkAvailability(event.at, now);
        break;
      case "branch-expiry":
        this.expireBranch(event.branchId, event.at);
        break;
      case "snapshot-expiry":
        this.expireSnapshot(event.snapshotId, event.at);
        break;
      case "project-purge":
        this.purgeProject(event.projectId, event.at);
        break;
    }
  }

  /** Keeps memory flat: beyond the cap, the oldest finished operations are forgotten. */
  private trimOperations(projectId: string): void {
    const list = this.operationsByProject.get(projectId);
    if (!list || list.length <= this.maxOperations + Math.ceil(this.maxOperations / 10)) return;
    const excess = list.length - this.maxOperations;
    const kept: OperationRecord[] = [];
    let dropped = 0;
    for (const op of list) {
      if (dropped < excess && settledStatuses.has(op.status)) {
        this.operations.delete(op.id);
        dropped++;
      } else {
        kept.push(op);
      }
    }
    this.operationsByProject.set(projectId, kept);
  }

  // --- persistence ---------------------------------------------------------

  snapshot(): WorldState {
    return {
      accounts: [...this.accounts.values()],
      apiKeys: [...this.apiKeysById.values()],
      nextApiKeyId: this.nextApiKeyId,
      nextDatabaseId: this.nextDatabaseId,
      projects: [...this.projects.values()],
      branches: [...this.branches.values()],
      endpoints: [...this.endpoints.values()],
      operations: [...this.operationsByProject.values()].flat(),
      deletedProjects: [...this.deletedProjects.values()],
      snapshots: [...this.snapshots.values()],
      ...(this.nextCheckAvailabilityAt === undefined
        ? {}
        : { nextCheckAvailabilityAt: this.nextCheckAvailabilityAt }),
      savedAt: this.clock.now(),
    };
  }

  /** Rebuilds a world from a snapshot, re-arming the events its records imply. */
  static restore(options: WorldOptions, state: WorldState): World {
    const world = new World(options);
    for (const account of state.accounts) world.addAccount(account);
    world.nextApiKeyId = state.nextApiKeyId;
    if (state.nextDatabaseId !== undefined) world.nextDatabaseId = state.nextDatabaseId;
    for (const key of state.apiKeys) {
      world.apiKeysById.set(key.id, key);
      world.apiKeysByDigest.set(key.digest, key);
    }
    for (const project of state.projects) world.addProject(project);
    for (const branch of state.branches) {
      world.addBranch(branch);
      world.scheduleBranchExpiry(branch);
      // A masking run does not survive the process that ran it.
      if (branch.anonymization?.state === "anonymizing") {
        branch.anonymization.state = "error";
        branch.anonymization.statusMessage = "the anonymization was interrupted by a restart of the emulator";
        branch.anonymization.failedAt = state.savedAt;
      }
    }
    for (const endpoint of state.endpoints) {
      world.addEndpoint(endpoint);
      world.scheduleAutosuspend(endpoint);
    }
    for (const op of state.operations) {
      // Written when `failed` was final: it has no retry coming, so it is what `error` is now.
      if (op.status === "failed" && op.retryAt === undefined) op.status = "error";
      world.operations.set(op.id, op);
      world.operationsByProject.get(op.projectId)?.push(op);
      world.lastMicros = Math.max(world.lastMicros, op.createdMicros);
      if (!settledStatuses.has(op.status)) world.locks.hold(op, 1);
      const dueAt = op.status === "failed" ? op.retryAt : op.doneAt;
      if (
        (op.status === "running" || op.status === "cancelling" || op.status === "failed") &&
        dueAt !== undefined
      ) {
        world.timeline.push({ at: dueAt, kind: "operation-due", operationId: op.id });
      }
    }
    for (const snapshot of state.snapshots ?? []) {
      world.snapshots.set(snapshot.id, snapshot);
      world.scheduleSnapshotExpiry(snapshot);
    }
    for (const deleted of state.deletedProjects ?? []) {
      world.deletedProjects.set(deleted.project.id, deleted);
      world.timeline.push({ at: deleted.purgeAt, kind: "project-purge", projectId: deleted.project.id });
    }
    world.startAvailabilityChecks(state.nextCheckAvailabilityAt);
    return world;
  }
}

/** The autosuspend delay in seconds that applies: 0 means the platform default, -1 never. */
export function effectiveSuspendTimeout(seconds: number): number {
  return seconds === 0 ? defaultSuspendTimeoutSeconds : seconds;
}
