/**
 * Settling operations in bulk. Polling every pending operation by id costs one request each;
 * a project's operation list is ordered newest first, so one paginated pass that stops at the
 * oldest pending operation settles all of them. The list is eventually consistent (an operation
 * just returned by a mutation may be missing), so whatever the pass did not see is read by id.
 * Calls to `refresh` within `batchWindowMs` of each other share one pass, and a pass serves
 * later calls for what it saw until the caller's next poll tick (wall-clock multiples of its poll
 * interval): the resources of a project that wake on the same tick are reconciled one after
 * another, not within one batch window. While the project's changes wait for their turn
 * (`busy`), it is listed at most once per `busyFactor` poll intervals and a poll is answered at
 * once from the latest pass that ended (running operations as last seen), the next pass starting
 * in the background: polling takes little of the budget the changes are waiting for, and no
 * worker waits on it.
 *
 * The platform's project-wide lock proves when operations have ended (an accepted change), never
 * how: an end it proves makes the operation due for a look, and its outcome is read, never
 * presumed (an operation that ended in `error` frees the lock too).
 */
import { setTimeout } from "node:timers/promises";
import { remember } from "./bounded.ts";
import { keyRefused } from "./errors.ts";
import type { Operation } from "./schemas.ts";

export interface OperationsPage {
  operations: Operation[];
  cursor: string | undefined;
}

/** What the tracker needs from a client: the reads it sends with the asking caller's key. */
export interface OperationsSource {
  listOperationsPage(
    projectId: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<OperationsPage>;
  getOperation(projectId: string, operationId: string): Promise<Operation>;
}

/**
 * How pending operations are looked at: `batched` (one shared list pass per project, the default)
 * or `per-operation` (one GET by id for each, as the platform's existing clients do; kept for
 * side-by-side benchmarks).
 */
export type OperationPolling = "batched" | "per-operation";

export interface OperationsTrackerOptions {
  /** Default `batched`. */
  polling?: OperationPolling;
  /** Operations per list page. Default 100 (the platform allows up to 1000). */
  pageSize?: number;
  /** Most pages read in one pass before falling back to reads by id. Default 5. */
  maxPages?: number;
  /** Calls to refresh within this window share one pass. Default 10 ms. */
  batchWindowMs?: number;
  /** Whether the project's changes wait for their turn (its gate holds tickets). Default: never. */
  busy?: () => boolean;
  /**
   * Whether changes come in a storm: the account's request budget busy with them (over many
   * projects), or the project's own changes waiting for their turn lately (its last ones, after
   * the line has gone). A change alone in its project is then looked at once, when such operations
   * have all ended, not step by step (a step costs a list; the storm's resources do not wait on
   * one change). Default: never.
   */
  storm?: () => boolean;
  /**
   * While busy, passes are this many poll intervals apart at least. Default 3: one list per
   * project per 15 s settles every operation that ended meanwhile (resources see Ready within
   * seconds, not at the end of the storm), and takes about one request in twelve of the budget.
   */
  busyFactor?: number;
  /**
   * By when `share` (0..1) of operations like these have ended, from the start of the first (their
   * own times, one after another; durations.ts); undefined while unknown. `lone` for the look at a
   * change alone in its project, where a look too early costs only one more look (the tail is
   * taken less cautiously).
   */
  endedBy?: (operations: readonly Operation[], share: number, lone?: boolean) => number | undefined;
  /** When the project's next change is expected to go (its mutation gate), while it holds changes back. */
  nextTurnAt?: () => number | undefined;
  /**
   * How long one of the project's turns usually lasts (its mutation gate): while its changes wait,
   * a turn proves one end, so the waits for a batch of proved ends and for a renewed pass are
   * counted in turns as well as in poll intervals.
   */
  turnMs?: () => number | undefined;
  /**
   * What the account believes of the platform's lock (shared by its projects): while `projectWide`,
   * a change the platform accepted proves that the project's earlier operations have ended.
   */
  lock?: LockBelief;
  /** Every operation a pass read, with the time the pass began (the mutation gate and durations learn from them). */
  observed?: (operations: readonly Operation[], listedAt: number) => void;
  /** Shortest step between two looks at a change alone in its project. Default 250 ms. */
  minStepMs?: number;
  now?: () => number;
}

/**
 * The platform refuses a change of a project (423) while any operation of it runs, on any branch
 * (platform-facts.md): so when it accepts one, every operation created before it has ended (how
 * it ended is read, never presumed). An account believes this until a list shows otherwise (an
 * operation taken as ended still running, or ended after the change that proved it), then times
 * its looks as if it knew nothing of the lock.
 */
export class LockBelief {
  projectWide = true;
}

/**
 * An operation whose action was never seen to finish is looked at this long after its creation,
 * then in steps as long: whatever its duration, a look comes at most this long after its end, and
 * operations up to twice as long take two looks (a create in four requests). Steps of half its
 * time so far, from a guessed second, took three looks for a 2 s operation.
 */
const unknownDurationMs = 1_500;

/** A change alone in its project is looked at when half of such operations have ended, then when all have. */
const loneShares = [0.5, 1];
/** In a storm (see `storm`) only when all have: one look each. */
const stormShares = [1];

/** After an answer, how long before the next change's answer can be there (the budget, the round trip). */
const turnMarginMs = 250;
/** While the project's changes wait, a resource looks again at least this much later. */
const busyMinLookMs = 1_000;

/** Operations created this close on one branch came from one request (timestamps have whole seconds). */
const sameRequestMs = 1_000;

/**
 * While the project's changes wait for their turn, proved ends are read by one list when this many
 * await it, or when the oldest has waited `proofWaitFactor` poll intervals or as many turns as the
 * batch takes to fill, whichever is longer (the gate's look before a turn reads them sooner where
 * turns are long: `lookBeforeTurn`): a list reads several outcomes, and none waits long.
 */
const proofBatch = 5;
const proofWaitFactor = 1.25;

/**
 * Where turns are longer (three of them outlast a poll's wait for a batch), the gate lists before
 * a turn once this many proved ends await a read: with the running change's own end, one list
 * reads three outcomes (a third of a list per change) and none waits more than two turns for
 * Ready. Read when the poll's wait ran out instead, operations of 3-6 s were read about once a
 * turn (0.4-0.77 lists per endpoint, docs/performance-matrix.md); read by count alone, Ready
 * lagged four turns behind.
 */
const unreadBeforeTurn = 2;

/** Proved ends and due times kept at most (bounded maps). */
const maxKept = 10_000;

/** Statuses after which an operation never changes (the platform's operations guide). */
const FINAL = new Set(["finished", "skipped", "error", "cancelled"]);
/** Final statuses of a change that did not happen. */
const FAILED_FINAL = new Set(["error", "cancelled"]);

type StatusOf = Pick<Operation, "status"> & { retryAt?: string | undefined };

/**
 * True while the platform retries the operation: `failed` is not final, `retry_at` says when the
 * next attempt runs and `failures_count` grows with each one. A `failed` record without `retry_at`
 * is one the platform did not schedule again, and counts as a final failure.
 */
export function isRetrying(operation: StatusOf): boolean {
  return operation.status === "failed" && operation.retryAt !== undefined;
}

/** True once an operation will not change any more. */
export function isSettled(operation: StatusOf): boolean {
  return FINAL.has(operation.status) || (operation.status === "failed" && !isRetrying(operation));
}

/** True for a settled operation that did not succeed: `error`, `cancelled`, or `failed` not retried. */
export function isFailed(operation: StatusOf): boolean {
  return FAILED_FINAL.has(operation.status) || (operation.status === "failed" && !isRetrying(operation));
}

export interface RefreshOptions {
  /**
   * How often the caller looks (default: the last caller's, at first 5 s): running operations
   * not alone in their project are looked at again on ticks of it.
   */
  pollIntervalMs?: number;
  /** The client whose key a new pass is sent with (a pass already open is shared, whoever opened it). */
  source: OperationsSource;
}

interface Batch {
  /** Pending operation id -> creation time, when known. */
  wanted: Map<string, number | undefined>;
  /** Every operation the pass saw (the wanted ones, and the others of the pages it read). */
  result: Promise<Map<string, Operation | Error>>;
  /** When the pass began to read. */
  startedAt?: number;
}

/** When a look at an operation seen running could tell something new, and whether it was alone. */
interface Due {
  at: number;
  alone: boolean;
}

/** An end an accepted change proved: when (this clock), and that change's creation time (the platform's). */
interface Proof {
  at: number;
  before: number;
  /** A pass begun after the proof read it. */
  read?: boolean;
}

const idOf = (op: Operation | string): string => (typeof op === "string" ? op : op.id);

/** Operations of one branch (or of the project) created by one request run one after another. */
const chainKey = (op: Operation): string => op.branchId ?? `project:${op.projectId}`;

/** Operations that hold the project's lock (check_availability is the control plane's, and never does). */
const locks = (op: Operation): boolean => op.action !== "check_availability";

/**
 * A project's operations, settled for every caller of the project (each of its account's keys):
 * see the top of this file.
 */
export class OperationsTracker {
  readonly projectId: string;
  private readonly pageSize: number;
  private readonly maxPages: number;
  private readonly batchWindowMs: number;
  private readonly polling: OperationPolling;
  private readonly busy: () => boolean;
  private readonly storm: () => boolean;
  private readonly busyFactor: number;
  private readonly endedBy: (
    operations: readonly Operation[],
    share: number,
    lone?: boolean,
  ) => number | undefined;
  private readonly nextTurnAt: () => number | undefined;
  private readonly turnMs: () => number | undefined;
  private readonly lock: LockBelief | undefined;
  private readonly observed: (operations: readonly Operation[], listedAt: number) => void;
  private readonly minStepMs: number;
  private readonly now: () => number;
  private open: Batch | undefined;
  /** The latest pass that began. */
  private last: Batch | undefined;
  /** What the latest pass that ended saw, and when it began to list. */
  private settled = new Map<string, Operation | Error>();
  private settledAt = Number.NEGATIVE_INFINITY;
  /** Which key a pass's failed read was sent with: a refusal of that key is not another key's. */
  private readonly failedWith = new WeakMap<Error, OperationsSource>();
  /** The callers' poll interval (the same for every caller of a client). */
  private pollIntervalMs = 5_000;
  /** Operations seen running by a pass: when a new look is worth it. */
  private readonly dues = new Map<string, Due>();
  /** Running operations callers asked about, and when they last did. */
  private readonly asked = new Map<string, number>();
  /**
   * Operations an accepted change proved ended: id -> when (this clock), the creation time of the
   * proving change (the platform's clock), and whether a pass has read it since.
   */
  private readonly proved = new Map<string, Proof>();
  /** The creation time (the platform's clock) before which every operation has ended. */
  private endedBefore = Number.NEGATIVE_INFINITY;
  private endedBeforeAt = Number.NEGATIVE_INFINITY;
  /** When the tracker began (this clock). */
  private readonly bornAt: number;
  /**
   * Callers to tell when a pass reads an operation they wait on as settled: id -> their wakes by
   * the caller's key (a resource that looks many times while it waits is woken once).
   */
  private readonly waiters = new Map<string, Map<string, () => void>>();

  constructor(projectId: string, options: OperationsTrackerOptions = {}) {
    this.projectId = projectId;
    this.pageSize = options.pageSize ?? 100;
    this.maxPages = options.maxPages ?? 5;
    this.batchWindowMs = options.batchWindowMs ?? 10;
    this.polling = options.polling ?? "batched";
    this.busy = options.busy ?? (() => false);
    this.storm = options.storm ?? (() => false);
    this.busyFactor = options.busyFactor ?? 3;
    this.endedBy = options.endedBy ?? (() => undefined);
    this.nextTurnAt = options.nextTurnAt ?? (() => undefined);
    this.turnMs = options.turnMs ?? (() => undefined);
    this.lock = options.lock;
    this.observed = options.observed ?? (() => undefined);
    this.minStepMs = options.minStepMs ?? 250;
    // Wall-clock time: poll ticks are aligned to it.
    this.now = options.now ?? (() => Date.now());
    this.bornAt = this.now();
  }

  /**
   * The latest record of each operation, in the order given. Operations already settled are
   * returned as they are, those an accepted change proved ended as finished; the others are read
   * in one shared pass (per-operation: each by id).
   */
  async refresh(
    operations: readonly (Operation | string)[],
    { pollIntervalMs: given, source }: RefreshOptions,
  ): Promise<Operation[]> {
    const pollIntervalMs = given ?? this.pollIntervalMs;
    if (this.polling === "per-operation") {
      return Promise.all(
        operations.map(async (op) =>
          typeof op !== "string" && isSettled(op)
            ? op
            : source.getOperation(this.projectId, typeof op === "string" ? op : op.id),
        ),
      );
    }
    if (given !== undefined) this.pollIntervalMs = given;
    const now = this.now();
    // Known only by id (the mutation gate's confirmation): always looked at.
    const known = (op: Operation | string): Operation | undefined => {
      if (typeof op === "string") return undefined;
      const seen = this.settled.get(op.id);
      // As the list recorded it, which names its branch and endpoint (a copy from a resource's
      // status does not): a chain that ended over two looks then settles its branch too.
      if (seen !== undefined && !(seen instanceof Error) && isSettled(seen)) return seen;
      return isSettled(op) ? op : undefined;
    };
    const pending = operations.filter((op) => known(op) === undefined);
    for (const op of pending) remember(this.asked, idOf(op), now, maxKept);
    const latest =
      pending.length > 0
        ? await this.latest(pending, pollIntervalMs, source)
        : new Map<string, Operation | Error>();
    return Promise.all(
      operations.map(async (op) => {
        const settled = known(op);
        if (settled) return settled;
        const found = latest.get(idOf(op));
        if (found instanceof Error) return this.failed(found, idOf(op), source);
        if (found) {
          if (isSettled(found)) this.asked.delete(found.id);
          return found;
        }
        // Not due, or busy: a change's operation no pass has seen is reported as given.
        if (typeof op !== "string") return op;
        throw new Error(`operation ${op} was not settled by the tracker`);
      }),
    );
  }

  /**
   * The platform accepted a change of the project whose operations were created at
   * `acceptedCreatedAt` (its clock): every operation in `ids` (those known before it was sent)
   * and every one created before it has ended. Each is due for a look at once (a pass reads how it
   * ended); a pass that shows one still running, or ended after that change, ends the belief.
   */
  provedEnded(ids: Iterable<string>, acceptedCreatedAt: number): void {
    if (!this.believed() || Number.isNaN(acceptedCreatedAt)) return;
    const now = this.now();
    for (const id of ids) {
      // Read as settled by a pass already: nothing left to read.
      const seen = this.settled.get(id);
      if (seen !== undefined && !(seen instanceof Error) && isSettled(seen)) continue;
      remember(this.proved, id, { at: now, before: acceptedCreatedAt }, maxKept);
      this.dues.delete(id);
    }
    if (acceptedCreatedAt > this.endedBefore) {
      this.endedBefore = acceptedCreatedAt;
      this.endedBeforeAt = now;
    }
  }

  /**
   * Calls `wake` once, when a pass (whoever's) reads one of these operations as settled: a caller
   * answered from an earlier pass (its project busy, or not alone in it) then comes back for the
   * outcome at once instead of at its next poll. A later call with the same key replaces the
   * earlier wake (each reconcile of a resource brings a new one).
   */
  whenSettled(ids: readonly string[], wake: Waker): void {
    if (this.polling !== "batched") return;
    for (const id of ids) {
      const wakes = this.waiters.get(id) ?? new Map<string, () => void>();
      wakes.set(wake.key, wake.call);
      remember(this.waiters, id, wakes, maxKept);
    }
  }

  /** The operations the tracker takes to be running: asked about, or seen running by a pass. */
  knownRunning(): string[] {
    return this.running(Number.NEGATIVE_INFINITY);
  }

  /**
   * Running operations asked about or seen since `since`: what a resource that stopped asking
   * (deleted meanwhile) left behind does not count for long.
   */
  private running(since: number): string[] {
    const ids = new Set<string>();
    for (const [id, at] of this.asked) if (at >= since) ids.add(id);
    for (const [id, due] of this.dues) if (due.at >= since) ids.add(id);
    if (this.settledAt >= since) {
      for (const [id, op] of this.settled)
        if (!(op instanceof Error) && !isSettled(op) && locks(op)) ids.add(id);
    }
    return [...ids].filter((id) => !this.proved.has(id));
  }

  /** Whether operations other than these were running lately (asked about, or seen by a pass). */
  private othersRunning(operations: readonly Operation[]): boolean {
    const since = this.now() - 3 * Math.max(this.pollIntervalMs, this.minStepMs);
    return this.running(since).some((id) => !operations.some((op) => op.id === id));
  }

  /**
   * When to look first at a change's operations (ms from now), or undefined to look on the
   * caller's poll grid: a change alone in its project, when half of such operations have ended
   * (all of them in a storm of the account; never seen to finish: after a guessed second); while
   * the project's changes wait for their turn, when its next change should have been accepted,
   * which proves this one's ended.
   */
  firstLook(operations: readonly Operation[], pollIntervalMs: number): number | undefined {
    const running = operations.filter((op) => !isSettled(op));
    if (running.length === 0) return 0;
    if (this.busy()) return this.turnLook(pollIntervalMs);
    if (this.othersRunning(running)) return undefined;
    const storm = this.storm();
    const shares = storm ? stormShares : loneShares;
    const ms = this.endedBy(running, shares[0]!);
    // In a storm, an unknown duration is not guessed at (each guess would cost a look).
    if (ms === undefined) return storm ? undefined : unknownDurationMs;
    return ms;
  }

  /**
   * When to look again at operations a look found running (ms from now), or undefined to look on
   * the caller's poll grid (they are not alone in their project).
   */
  nextLook(operations: readonly Operation[], pollIntervalMs: number): number | undefined {
    const running = operations.filter((op) => !isSettled(op));
    if (running.length === 0) return undefined;
    if (this.busy()) return this.turnLook(pollIntervalMs);
    const now = this.now();
    let at: number | undefined;
    for (const op of running) {
      // Proved ended: the next look reads how (in a storm, a batch's look: see `latest`).
      if (this.proofOf(op) !== undefined)
        return this.storm() ? Math.max(pollIntervalMs * proofWaitFactor, this.minStepMs) : this.minStepMs;
      const due = this.dues.get(op.id);
      // Not seen by a pass yet (not due): when it is, if nothing else runs there.
      if (due === undefined && this.othersRunning(running)) return undefined;
      const next = due === undefined ? this.firstDue(op, running) : due.alone ? due.at : undefined;
      if (next === undefined) return undefined;
      at = Math.min(at ?? next, next);
    }
    return at === undefined ? undefined : Math.max(at - now, this.minStepMs);
  }

  /** While the project's changes wait: when its next change should have been accepted. */
  private turnLook(pollIntervalMs: number): number | undefined {
    const turn = this.nextTurnAt();
    if (turn === undefined || !this.believed()) return undefined;
    const ms = turn - this.now() + turnMarginMs;
    return Math.min(Math.max(ms, busyMinLookMs), pollIntervalMs);
  }

  private believed(): boolean {
    return this.polling === "batched" && this.lock?.projectWide === true;
  }

  /** When (this clock) an accepted change proved the operation ended, if one did. */
  private proofOf(op: Operation): number | undefined {
    if (!this.believed() || !locks(op)) return undefined;
    const proof = this.proved.get(op.id);
    if (proof) return proof.at;
    const created = Date.parse(op.createdAt);
    if (!(created < this.endedBefore)) return undefined;
    remember(this.proved, op.id, { at: this.endedBeforeAt, before: this.endedBefore }, maxKept);
    return this.endedBeforeAt;
  }

  /**
   * Whether the project's gate should list before its next turn: proved ends no pass has read
   * wait (`unreadBeforeTurn`), and the poll's wait for a batch (1.25 polls) runs out in fewer
   * turns than such a look comes (`unreadBeforeTurn` + 1), so a storm's reads would come more
   * often than the look's. That list reads them and the running change's own end, and tells the
   * gate whether the next change may go. Shorter turns keep the batch: at 2 s turns and the 5 s
   * poll, the wait reads about every three turns, and looking first read every two and a half
   * (50 over 1 at 2 s ± 25%: 0.38 lists per endpoint with the look, 0.32 without).
   */
  lookBeforeTurn(): boolean {
    const turnMs = this.turnMs();
    // A look comes every `unreadBeforeTurn` + 1 turns; the batch's wait runs out after 1.25 polls.
    if (turnMs === undefined || (unreadBeforeTurn + 1) * turnMs <= this.pollIntervalMs * proofWaitFactor) {
      return false;
    }
    const since = this.last?.startedAt ?? Number.NEGATIVE_INFINITY;
    let unread = 0;
    for (const proof of this.proved.values()) if (!proof.read && proof.at > since) unread++;
    return unread >= unreadBeforeTurn;
  }

  /**
   * Whether proved ends waiting for a pass (proved since `since`) are worth a list now: enough of
   * them, or the oldest waited `maxWaitMs`.
   */
  private proofsWaiting(since: number, maxWaitMs: number): boolean {
    const waiting = [...this.proved.values()].filter((proof) => !proof.read && proof.at > since);
    if (waiting.length >= proofBatch) return true;
    const oldest = Math.min(...waiting.map((proof) => proof.at));
    return waiting.length > 0 && oldest <= this.now() - maxWaitMs;
  }

  /** A wait of `ms`, or of `turns` of the project's turns if those last longer. */
  private inTurns(ms: number, turns: number): number {
    return Math.max(ms, turns * (this.turnMs() ?? 0));
  }

  /** A read of a pass failed: the caller's own failure, or another key's refusal (read again with its own key). */
  private async failed(error: Error, id: string, source: OperationsSource): Promise<Operation> {
    const sentWith = this.failedWith.get(error);
    if (sentWith === undefined || sentWith === source || !keyRefused(error)) throw error;
    return source.getOperation(this.projectId, id);
  }

  /** Records of the pending operations: from a recent enough pass, or from a new one. */
  private async latest(
    pending: readonly (Operation | string)[],
    pollIntervalMs: number,
    source: OperationsSource,
  ): Promise<Map<string, Operation | Error>> {
    const last = this.last;
    const busy = this.busy();
    const now = this.now();
    const startedAt = last?.startedAt;
    const objects = pending.filter((op): op is Operation => typeof op !== "string");
    // Known only by id: looked at now. Otherwise when due: before that a list could only show
    // them running (a resource woken by its own status write right after its change is answered
    // as it knew them), and a pass that looked since they became due has answered for them.
    const dueAt = (op: Operation | string): number =>
      typeof op === "string"
        ? now
        : (this.proofOf(op) ?? this.dues.get(op.id)?.at ?? this.firstDue(op, objects));
    const due = pending.filter((op) => dueAt(op) <= now);
    if (due.length === 0) return this.settled;
    if (busy && objects.length === pending.length) {
      // While the project's changes wait for their turn, a poll never waits for a list (nor holds
      // a worker that a change's turn needs): it is answered from the latest pass that ended, or
      // as the caller last knew, and a pass older than the window is renewed for the next poll.
      // Proved ends are renewed sooner: a list then reads outcomes that are certainly there.
      // Where the lock proves ends, a project that never listed counts from its tracker's start:
      // its first changes' ends are proved by the next changes' answers (or guessed, and
      // confirmed by the gate's one list for the account).
      const listed = startedAt ?? (this.believed() ? this.bornAt : Number.NEGATIVE_INFINITY);
      if (
        listed < now - this.inTurns(pollIntervalMs * this.busyFactor, proofBatch) ||
        this.proofsWaiting(
          startedAt ?? Number.NEGATIVE_INFINITY,
          this.inTurns(pollIntervalMs * proofWaitFactor, proofBatch),
        )
      ) {
        void this.join(pending, source).result.catch(() => undefined);
      }
      return this.settled;
    }
    if (
      this.storm() &&
      due.every((op) => typeof op !== "string" && this.proofOf(op) !== undefined) &&
      !this.proofsWaiting(startedAt ?? Number.NEGATIVE_INFINITY, pollIntervalMs * proofWaitFactor)
    ) {
      // In a storm, proved ends are read in batches (as while busy): by the next pass that comes
      // anyway, such as the look at the last change (its callers are woken), or when enough wait.
      return this.settled;
    }
    if (last && startedAt !== undefined && due.every((op) => startedAt >= dueAt(op))) {
      // It looked since they became due, if it saw them (created timestamps have whole seconds:
      // an operation may look due before it was made).
      const seen = await last.result;
      if (due.every((op) => seen.has(idOf(op)))) return seen;
    }
    return this.join(pending, source).result;
  }

  /**
   * When an operation no pass has seen running is due to have ended: its chain's (the caller's
   * pending operations) usual time after its creation, a guessed second when unknown. One
   * created after now by this clock (the platform's runs ahead) is due now: a skewed clock must
   * not hold a look back.
   */
  private firstDue(op: Operation, chain: readonly Operation[]): number {
    const created = Date.parse(op.createdAt);
    if (Number.isNaN(created) || created > this.now()) return Number.NEGATIVE_INFINITY;
    const mates = chain.filter((o) => chainKey(o) === chainKey(op));
    return created + (this.endedBy(mates.length > 0 ? mates : [op], loneShares[0]!) ?? unknownDurationMs);
  }

  private join(pending: readonly (Operation | string)[], source: OperationsSource): Batch {
    if (!this.open) {
      const wanted = new Map<string, number | undefined>();
      const batch: Batch = {
        wanted,
        result: setTimeout(this.batchWindowMs).then(() => {
          if (this.open === batch) this.open = undefined;
          batch.startedAt = this.now();
          this.last = batch;
          return this.pass(wanted, source);
        }),
      };
      this.open = batch;
    }
    for (const op of pending) {
      if (typeof op === "string") {
        if (!this.open.wanted.has(op)) this.open.wanted.set(op, undefined);
      } else {
        this.open.wanted.set(op.id, Date.parse(op.createdAt));
      }
    }
    return this.open;
  }

  private async pass(
    wanted: Map<string, number | undefined>,
    source: OperationsSource,
  ): Promise<Map<string, Operation | Error>> {
    const found = new Map<string, Operation | Error>();
    const listedAt = this.now();
    const known = [...wanted.values()].filter((t): t is number => t !== undefined && !Number.isNaN(t));
    const oldest = known.length > 0 ? Math.min(...known) : undefined;
    try {
      let cursor: string | undefined;
      const allFound = (): boolean => [...wanted.keys()].every((id) => found.has(id));
      for (let page = 0; page < this.maxPages && !allFound(); page++) {
        const { operations, cursor: next } = await source.listOperationsPage(this.projectId, {
          limit: this.pageSize,
          cursor,
        });
        for (const op of operations) found.set(op.id, op);
        const last = operations.at(-1);
        const passedOldest =
          last !== undefined && (oldest === undefined || Date.parse(last.createdAt) < oldest);
        if (passedOldest || operations.length < this.pageSize || next === undefined || next === cursor) break;
        cursor = next;
      }
    } catch {
      // The list is an optimisation; reads by id below still settle every operation.
    }
    const missing = [...wanted.keys()].filter((id) => !found.has(id));
    await Promise.all(
      missing.map(async (id) => {
        try {
          found.set(id, await source.getOperation(this.projectId, id));
        } catch (error) {
          const failure = error instanceof Error ? error : new Error(String(error));
          this.failedWith.set(failure, source);
          found.set(id, failure);
        }
      }),
    );
    const records = [...found.values()].filter((op): op is Operation => !(op instanceof Error));
    this.observed(records, listedAt);
    this.verify(records, listedAt);
    this.plan(records, listedAt);
    if (this.settled.size === 0 || listedAt >= this.settledAt) {
      this.settled = found;
      this.settledAt = listedAt;
    }
    this.wakeSettled(records);
    return found;
  }

  private wakeSettled(records: readonly Operation[]): void {
    const wakes = new Map<string, () => void>();
    for (const op of records) {
      if (!isSettled(op)) continue;
      for (const [key, wake] of this.waiters.get(op.id) ?? []) wakes.set(key, wake);
      this.waiters.delete(op.id);
    }
    for (const wake of wakes.values()) wake();
  }

  /**
   * Proved ends a pass read (begun after the proof). Still running, or ended after the change that
   * proved it: the lock is not the project's, and nothing is taken as proved any more (looks are
   * timed as without the lock's proofs; outcomes were read all along).
   */
  private verify(records: readonly Operation[], listedAt: number): void {
    for (const op of records) {
      const proof = this.proved.get(op.id);
      if (proof === undefined || proof.read || listedAt < proof.at) continue;
      proof.read = true;
      const ended = Date.parse(op.createdAt) + (op.totalDurationMs ?? 0);
      // Timestamps have whole seconds: an end within the proving second is not a contradiction.
      if (!isSettled(op) || (op.totalDurationMs !== undefined && ended > proof.before + sameRequestMs)) {
        if (this.lock) this.lock.projectWide = false;
        this.proved.clear();
        this.endedBefore = Number.NEGATIVE_INFINITY;
        return;
      }
    }
  }

  /**
   * When each operation the pass saw running is worth looking at again. Alone in the project (one
   * chain running, no change waiting, the account's budget not in a storm): when its chain's
   * running operation has most likely ended (half of such, then all), then in steps that grow
   * with how late it is; a guessed second, then half its time so far, when never seen to finish.
   * Otherwise the caller's next poll tick.
   */
  private plan(records: readonly Operation[], listedAt: number): void {
    const running = records.filter((op) => !isSettled(op) && locks(op));
    for (const op of records) if (isSettled(op)) this.dues.delete(op.id);
    if (running.length === 0) return;
    const chains = new Map<string, Operation[]>();
    for (const op of running) {
      const key = `${chainKey(op)}@${Math.floor(Date.parse(op.createdAt) / sameRequestMs)}`;
      chains.set(key, [...(chains.get(key) ?? []), op]);
    }
    const alone = chains.size === 1 && !this.busy();
    const now = this.now();
    const poll = Math.max(this.pollIntervalMs, 1);
    for (const chain of chains.values()) {
      const at = alone
        ? this.loneDue(chain, records, listedAt, now)
        : Math.floor(listedAt / poll) * poll + poll;
      for (const op of chain) remember(this.dues, op.id, { at, alone }, maxKept);
    }
  }

  private loneDue(
    chain: readonly Operation[],
    records: readonly Operation[],
    listedAt: number,
    now: number,
  ): number {
    const poll = Math.max(this.pollIntervalMs, this.minStepMs);
    const current = chain.find((op) => op.status === "running" || isRetrying(op)) ?? chain[0]!;
    const rest = chain.filter((op) => op !== current);
    // How long the current one has run: from the end of the chain's last finished one (same
    // branch, same request), at the list's time; both from the platform's own figures.
    const created = Date.parse(current.createdAt);
    let startedAfter = 0;
    for (const op of records) {
      if (op.status !== "finished" || op.totalDurationMs === undefined || chainKey(op) !== chainKey(current))
        continue;
      const mate = Date.parse(op.createdAt);
      if (Math.abs(mate - created) >= sameRequestMs) continue;
      startedAfter = Math.max(startedAfter, mate + op.totalDurationMs - created);
    }
    const ran =
      current.status === "running" && current.totalDurationMs !== undefined
        ? Math.max(0, current.totalDurationMs - startedAfter)
        : 0;
    const earliest = now + this.minStepMs;
    const lone = !this.storm();
    for (const share of lone ? loneShares : stormShares) {
      const own = this.endedBy([current], share, lone);
      const after = rest.length > 0 ? this.endedBy(rest, share, lone) : 0;
      if (own === undefined || after === undefined) break;
      const at = listedAt + own + after - ran;
      if (at >= earliest) return at;
    }
    // Later than all such operations (or of unknown length): steps that grow with its lateness.
    const longest = this.endedBy([current], 1, lone);
    if (longest === undefined) {
      // Never seen to finish: on its steps of the guess from its start.
      const next = listedAt - ran + unknownDurationMs * (Math.floor(ran / unknownDurationMs) + 1);
      return Math.max(Math.min(next, now + poll), earliest);
    }
    return now + Math.min(Math.max((ran - longest) / 2, this.minStepMs), poll);
  }
}

export type OperationsOutcome =
  | { state: "finished"; operations: Operation[] }
  | { state: "failed"; operations: Operation[]; failed: Operation[]; failuresCount: number }
  | {
      state: "running";
      operations: Operation[];
      running: Operation[];
      /** The running ones the platform is retrying after a failure (`failed` with `retry_at`). */
      retrying: Operation[];
      failuresCount: number;
      /** When to look again: the poll interval. */
      retryAfterMs: number;
      /**
       * When a look could tell more, for operations alone in their project (or waiting on its next
       * change's turn): sooner than the poll interval. Absent: look on the poll grid.
       */
      nextLookMs?: number;
    };

/** Summarises operations: failed wins over running, running (retrying included) over finished. */
export function summarizeOperations(operations: Operation[], pollIntervalMs: number): OperationsOutcome {
  const failuresCount = operations.reduce((sum, op) => sum + op.failuresCount, 0);
  const failed = operations.filter((op) => isFailed(op));
  if (failed.length > 0) return { state: "failed", operations, failed, failuresCount };
  const running = operations.filter((op) => !isSettled(op));
  if (running.length > 0) {
    const retrying = running.filter((op) => isRetrying(op));
    return { state: "running", operations, running, retrying, failuresCount, retryAfterMs: pollIntervalMs };
  }
  return { state: "finished", operations };
}

export interface WaitOptions {
  /** Interval between looks. Default 5 s, as the platform recommends. */
  pollIntervalMs?: number;
  /**
   * How long to keep polling inside the call. Default 0: look once and report, so a controller
   * requeues after `retryAfterMs` instead of holding a worker.
   */
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * Called once when a later pass (anyone's) reads the still running operations as settled: the
   * caller's requeue can then come early (batched polling only). `key` names the caller (a
   * resource): its later waits replace this one, so it is woken once.
   */
  wake?: Waker | undefined;
}

/** Who to wake (a resource, by its key) and how. */
export interface Waker {
  key: string;
  call: () => void;
}

/**
 * Reports whether the operations finished, failed (with failuresCount) or are still running;
 * `source` is the client whose key a look is sent with.
 */
export async function waitForOperations(
  tracker: OperationsTracker,
  operations: readonly (Operation | string)[],
  options: WaitOptions & { source: OperationsSource },
): Promise<OperationsOutcome> {
  const pollIntervalMs = options.pollIntervalMs ?? 5_000;
  const deadline = performance.now() + (options.timeoutMs ?? 0);
  let current: readonly (Operation | string)[] = operations;
  for (;;) {
    options.signal?.throwIfAborted();
    const latest = await tracker.refresh(current, { pollIntervalMs, source: options.source });
    const outcome = summarizeOperations(latest, pollIntervalMs);
    if (outcome.state === "running") {
      const nextLookMs = tracker.nextLook(outcome.running, pollIntervalMs);
      if (nextLookMs !== undefined) outcome.nextLookMs = nextLookMs;
      if (options.wake)
        tracker.whenSettled(
          outcome.running.map((op) => op.id),
          options.wake,
        );
    }
    if (outcome.state !== "running" || performance.now() + pollIntervalMs > deadline) return outcome;
    current = latest;
    await setTimeout(pollIntervalMs, undefined, { signal: options.signal });
  }
}
