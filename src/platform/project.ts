/**
 * A project of an account, as the platform keeps it: one change at a time under a project-wide
 * lock (its mutation gate), its endpoints and branches (lists shared by every reader), and its
 * operations (one tracker settles them all). The platform's lock is the project's whichever key
 * sends a change, so the clients of every key of the account share this one object (account.ts):
 * two keys never race each other into a 423, nor list the same project twice.
 *
 * What a change does to this state is written once per route (routes.ts: `shows`, `alters`);
 * `change` applies it.
 */
import type { RateBudget } from "./budget.ts";
import type { Branch } from "./branch-schemas.ts";
import { cautiousSpread, lookSpread, type OperationDurations } from "./durations.ts";
import { notApplied } from "./errors.ts";
import { type GuessedEnds, MutationGate, type MutationGateOptions } from "./gate.ts";
import {
  isSettled,
  type LockBelief,
  type OperationPolling,
  type OperationsOutcome,
  type OperationsSource,
  OperationsTracker,
  type OperationsTrackerOptions,
} from "./operations.ts";
import type { Project as ProjectView, ProjectCreated } from "./project-schemas.ts";
import type { ChangeAnswer, Route } from "./routes.ts";
import type { Endpoint, Operation } from "./schemas.ts";
import { ListSnapshot } from "./snapshot.ts";

/** How an account's projects behave (the same for all of them). */
export interface ProjectOptions {
  /** How long an endpoint or branch list is shared by readers of the same project. Default 1 s. */
  snapshotWindowMs?: number;
  operations?: OperationsTrackerOptions;
  /** How running operations are looked at (overrides `operations.polling`). Default `batched`. */
  operationPolling?: OperationPolling;
  /**
   * A project's changes go one at a time, each when the operations of the last are expected to
   * have ended (gate.ts). `false` sends them as they come (and into 423s). Default on.
   */
  mutationGate?: false | Partial<Omit<MutationGateOptions, "expected">>;
}

/** What a project takes from its account. */
export interface ProjectAccount {
  readonly budget: RateBudget;
  readonly durations: OperationDurations;
  readonly options: ProjectOptions;
  /** While no duration is known, one project of the account confirms a guessed end at a time. */
  readonly guesses?: GuessedEnds;
  /** Whether an accepted change proves the project's earlier operations ended (shared by its projects). */
  readonly lock?: LockBelief;
}

/** The state an endpoint is in once these operations of it finished, when their action says it. */
const stateAfter: Record<string, string> = { start_compute: "active", suspend_compute: "idle" };

export interface ChangeOptions {
  signal?: AbortSignal | undefined;
  /** Who asks (a resource's key): held back, it is told when its own turn comes. */
  ticket?: string | undefined;
  /** Brings the ticket's caller back when its turn comes sooner than it was told. */
  wake?: (() => void) | undefined;
  /** The client that sends it: a look at the project's operations goes with its key. */
  source: OperationsSource;
}

/**
 * A project whose changes waited for their turn this recently (or within two of its turns, when
 * those are longer) is still in its storm: its last changes, sent after the line has gone, are
 * looked at as a storm's are (once each), and the end the last one proved is read by the look at
 * it. Ten seconds alone ended the storm before the last change of operations of 6 s went.
 */
const stormTailMs = 10_000;
const stormTailTurns = 2;

/**
 * This many changes of the account running at once are a storm too, though none waits for the
 * budget or a turn (the budget's first burst sends them at once): looked at twice each, as a
 * change alone is, ten changes of 2 s take the budget's whole even pace (11.7 requests a second).
 */
const stormInFlight = 10;

/** How long a create's connection URIs are held for their first read. */
const createdUrisHeldMs = 5 * 60_000;

/** Which connection URI: the branch, endpoint, role and database it names. */
export interface UriKey {
  branchId?: string | undefined;
  endpointId?: string | undefined;
  roleName: string;
  databaseName: string;
}

const uriKey = (k: UriKey) =>
  JSON.stringify([k.branchId ?? "", k.endpointId ?? "", k.roleName, k.databaseName]);

/** The object a change's answer shows, when it shows one. */
type Shown = Partial<{ endpoint: Endpoint; branch: Branch; endpoints: Endpoint[] }> | undefined;

export class Project {
  readonly id: string;
  private readonly account: ProjectAccount;
  /** The project itself as the platform last showed it (a read, or its create's or a change's answer). */
  private shown: { project: ProjectView; at: number } | undefined;
  /**
   * The owner role's connection URIs (with its password) its create answered, for their first
   * read: a new project's connection Secret then costs no request. Only in memory, dropped when
   * read, at the project's next change (a password reset among them) and after a few minutes.
   */
  private createdUris: Map<string, string> | undefined;
  // The project's lists, operations tracker and mutation gate are made when first used: most of an
  // account's projects at rest (tenants adopted and left alone) never list, send a change or wait
  // for an operation again, and made at once they cost about 3.5 KB a project (docs/scale.md).
  private endpointList: ListSnapshot<Endpoint> | undefined;
  private branchList: ListSnapshot<Branch> | undefined;
  private tracker: OperationsTracker | undefined;
  private mutationGate: MutationGate | undefined;

  constructor(id: string, account: ProjectAccount) {
    this.id = id;
    this.account = account;
  }

  /** The project's endpoints, as one list shared by every reader (snapshot.ts). */
  get endpoints(): ListSnapshot<Endpoint> {
    return (this.endpointList ??= new ListSnapshot({ windowMs: this.account.options.snapshotWindowMs }));
  }

  /** The project's branches, as one list shared by every reader (snapshot.ts). */
  get branches(): ListSnapshot<Branch> {
    return (this.branchList ??= new ListSnapshot({ windowMs: this.account.options.snapshotWindowMs }));
  }

  /**
   * Forgets the lists no reader would take any more (`ListSnapshot.stale`); the next reader lists
   * again, as it would have. The account's sweep calls it (accounts.ts).
   */
  forgetStaleLists(): void {
    if (this.endpointList?.stale()) this.endpointList = undefined;
    if (this.branchList?.stale()) this.branchList = undefined;
  }

  /** What settles the project's operations (operations.ts). */
  get operations(): OperationsTracker {
    return (this.tracker ??= this.newTracker());
  }

  /** The project's mutation gate (gate.ts); none when the account's options turn gates off. */
  private get gate(): MutationGate | undefined {
    const { account } = this;
    const { durations, options } = account;
    if (options.mutationGate === false) return undefined;
    return (this.mutationGate ??= new MutationGate(this.id, {
      ...options.mutationGate,
      expected: (ops, share) => durations.endedBy(ops, share),
      borrowed: (ops, share) => durations.borrowedEndedBy(ops, share),
      outlasted: (ops, ms) => durations.outlasted(ops, ms),
      guesses: account.guesses,
      projectWideLock: () => account.lock?.projectWide === true,
      lookFirst: () => this.operations.lookBeforeTurn(),
    }));
  }

  private newTracker(): OperationsTracker {
    const { account } = this;
    const { durations, options } = account;
    return new OperationsTracker(this.id, {
      // Polling yields to changes waiting: the project's own for their turn (a project whose
      // changes are all sent looks as usual, so its last resources see Ready soon), or without
      // a gate any change waiting for the rate budget.
      busy: () => (this.gate ? this.gate.holding() : account.budget.busyWithMutations()),
      storm: () =>
        account.budget.busyWithMutations() ||
        account.budget.waiting > 0 ||
        account.durations.inFlight() >= stormInFlight ||
        (this.gate?.heldWithin(Math.max(stormTailMs, stormTailTurns * this.gate.turnMs())) ?? false),
      // An action never seen to finish is taken to last as long as the known ones.
      endedBy: (ops, share, lone) => {
        const spread = lone ? lookSpread : cautiousSpread;
        return durations.endedBy(ops, share, spread) ?? durations.borrowedEndedBy(ops, share, spread);
      },
      nextTurnAt: () => this.gate?.nextTurnAt(),
      turnMs: () => this.gate?.turnMs(),
      lock: account.lock,
      observed: (operations, listedAt) => {
        durations.observeAll(operations);
        if (operations.length > 0) this.gate?.observe(operations, listedAt);
      },
      ...options.operations,
      ...(options.operationPolling === undefined ? {} : { polling: options.operationPolling }),
    });
  }

  /**
   * Sends a change of the project when its turn comes, and tells the project's state what it did
   * (`route.shows`, `route.alters`). A change that failed, or whose outcome is unknown, makes the
   * next reader list what it may have changed; one the platform certainly did not apply (held
   * back, 423, 429) changes nothing.
   */
  async change<T extends ChangeAnswer>(
    route: Route<string, T>,
    ids: Readonly<Record<string, string | number>>,
    send: () => Promise<T>,
    options: ChangeOptions,
  ): Promise<T> {
    this.createdUris = undefined;
    let answer: T;
    // What ran before the change went: if the platform accepts it, all of that has ended.
    let before: string[] = [];
    const sent = () => {
      before = [...this.operations.knownRunning(), ...(this.gate?.runningIds() ?? [])];
      return send();
    };
    try {
      answer = this.gate
        ? await this.gate.run(sent, (a) => a?.operations ?? [], {
            ticket: options.ticket,
            wake: options.wake,
            signal: options.signal,
            confirm: (ids) => this.operations.refresh(ids, { source: options.source }),
          })
        : await sent();
    } catch (err) {
      if (!notApplied(err)) this.forget(route);
      throw err;
    }
    this.record(route, ids, answer);
    this.proved(before, answer?.operations ?? []);
    this.account.durations.started((answer?.operations ?? []).filter((op) => !isSettled(op)));
    return answer;
  }

  /** A create's answer: the project as created, and the owner role's connection URIs for their first read. */
  created(answer: ProjectCreated, uris: readonly { uri: string; role: string; database: string }[]): void {
    this.show(answer.project);
    const endpoint = answer.endpoints.find((e) => e.branchId === answer.branch.id && e.type === "read_write");
    if (uris.length === 0) return;
    const held = (this.createdUris ??= new Map());
    for (const { uri, role, database } of uris) {
      const key = { branchId: answer.branch.id, roleName: role, databaseName: database };
      held.set(uriKey(key), uri);
      if (endpoint) held.set(uriKey({ ...key, endpointId: endpoint.id }), uri);
    }
    setTimeout(() => held.clear(), createdUrisHeldMs).unref();
  }

  /** A connection URI its create answered, once: the first read of it takes it. */
  takeCreatedUri(key: UriKey): string | undefined {
    const id = uriKey(key);
    const uri = this.createdUris?.get(id);
    this.createdUris?.delete(id);
    return uri;
  }

  /** Records what the platform showed of the project itself. */
  show(project: ProjectView): void {
    this.shown = { project, at: performance.now() };
  }

  /** The project as last shown, when that is no older than `maxAgeMs`. */
  shownWithin(maxAgeMs: number): ProjectView | undefined {
    const shown = this.shown;
    return shown && performance.now() - shown.at < maxAgeMs ? shown.project : undefined;
  }

  /** What was shown may no longer hold: a change whose outcome is unknown, a deletion. */
  unshow(): void {
    this.shown = undefined;
  }

  /**
   * When to look first at a change's operations (ms from now), or undefined: on the caller's poll
   * grid (operations.ts, `firstLook`).
   */
  firstLook(operations: readonly Operation[], pollIntervalMs: number): number | undefined {
    return this.operations.firstLook(operations, pollIntervalMs);
  }

  /**
   * The platform accepted a change that started operations: it runs them under the project's
   * lock, so nothing else held it, and what ran before has ended (the tracker reads how when it
   * is next asked; it never presumes success).
   */
  private proved(before: readonly string[], operations: readonly Operation[]): void {
    if (operations.length === 0) return;
    const createdAt = Math.min(...operations.map((op) => Date.parse(op.createdAt)));
    const own = new Set(operations.map((op) => op.id));
    const ended = before.filter((id) => !own.has(id));
    this.operations.provedEnded(ended, createdAt);
    if (this.account.lock?.projectWide === true) this.account.durations.ended(ended);
  }

  /**
   * What waiting for a change's operations found: their durations are learned, and the lists
   * follow their outcome (failed: listed again; finished: objects in the state announced).
   */
  settle(outcome: OperationsOutcome): void {
    this.account.durations.observeAll(outcome.operations);
    if (outcome.state === "failed") {
      this.endpoints.invalidate();
      this.branches.invalidate();
    }
    if (outcome.state === "finished") {
      // Each endpoint is in the state its answer announced, or that its last operation's action
      // leaves it in (start and suspend answers announce none).
      const last = new Map<string, string | undefined>();
      for (const op of outcome.operations) {
        if (op.endpointId && op.status === "finished") last.set(op.endpointId, stateAfter[op.action]);
      }
      const endpoints = new Set(outcome.operations.map((op) => op.endpointId));
      for (const endpointId of endpoints)
        if (endpointId) this.endpoints.settle(endpointId, last.get(endpointId));
      // An operation on one of the branch's endpoints (start_compute, apply_config) leaves the
      // branch's state as it was: only the branch's own operations settle it.
      const branches = new Set(outcome.operations.filter((op) => !op.endpointId).map((op) => op.branchId));
      for (const branchId of branches) if (branchId) this.branches.settle(branchId);
    }
  }

  /** A successful change: what its answer shows is recorded, what it alters is listed again. */
  private record(route: Route, ids: Readonly<Record<string, string | number>>, answer: ChangeAnswer): void {
    for (const list of route.alters ?? []) this[list].invalidate();
    const shown = answer as Shown;
    const removed = route.method === "DELETE";
    if (route.shows === "endpoint") {
      if (shown?.endpoint) this.endpoints.record(shown.endpoint, removed);
      else this.endpoints.remove(String(ids["endpoint_id"]));
    }
    if (route.shows === "branch") {
      if (shown?.branch) this.branches.record(shown.branch, removed);
      else this.branches.remove(String(ids["branch_id"]));
      // A new branch's endpoints, as its answer shows them.
      if (!removed) for (const endpoint of shown?.endpoints ?? []) this.endpoints.record(endpoint);
    }
  }

  /** A change that may or may not have been applied: every list it could have changed is read again. */
  private forget(route: Route): void {
    for (const list of route.alters ?? []) this[list].invalidate();
    if (route.shows === "endpoint") this.endpoints.invalidate();
    // A branch's answer would have shown its endpoints too.
    if (route.shows === "branch") {
      this.branches.invalidate();
      this.endpoints.invalidate();
    }
  }
}
