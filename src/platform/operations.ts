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
 */
import { setTimeout } from "node:timers/promises";
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
  /** Whether the account's budget is busy with changes. Default: never. */
  busy?: () => boolean;
  /**
   * While busy, passes are this many poll intervals apart at least. Default 3: one list per
   * project per 15 s settles every operation that ended meanwhile (resources see Ready within
   * seconds, not at the end of the storm), and takes about one request in twelve of the budget.
   */
  busyFactor?: number;
  /** How long an operation like this one usually runs, when known (see durations.ts). */
  expectedDuration?: (operation: Operation) => number | undefined;
  /** Every operation a pass read, with the time the pass began (the mutation gate and durations learn from them). */
  observed?: (operations: readonly Operation[], listedAt: number) => void;
  now?: () => number;
}

/** The due time of an operation whose action was never seen to finish (the mutation gate's guess too). */
const unknownDurationMs = 1_000;

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
  /** How often the caller looks (default 4 s): a pass begun since the current tick of that interval began still answers. */
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

const idOf = (op: Operation | string): string => (typeof op === "string" ? op : op.id);

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
  private readonly busyFactor: number;
  private readonly expectedDuration: (operation: Operation) => number | undefined;
  private readonly observed: (operations: readonly Operation[], listedAt: number) => void;
  private readonly now: () => number;
  private open: Batch | undefined;
  /** The latest pass that began. */
  private last: Batch | undefined;
  /** What the latest pass that ended saw, and when it began to list. */
  private settled = new Map<string, Operation | Error>();
  private settledAt = Number.NEGATIVE_INFINITY;
  /** Which key a pass's failed read was sent with: a refusal of that key is not another key's. */
  private readonly failedWith = new WeakMap<Error, OperationsSource>();

  constructor(projectId: string, options: OperationsTrackerOptions = {}) {
    this.projectId = projectId;
    this.pageSize = options.pageSize ?? 100;
    this.maxPages = options.maxPages ?? 5;
    this.batchWindowMs = options.batchWindowMs ?? 10;
    this.polling = options.polling ?? "batched";
    this.busy = options.busy ?? (() => false);
    this.busyFactor = options.busyFactor ?? 3;
    this.expectedDuration = options.expectedDuration ?? (() => undefined);
    this.observed = options.observed ?? (() => undefined);
    // Wall-clock time: poll ticks are aligned to it.
    this.now = options.now ?? (() => Date.now());
  }

  /**
   * The latest record of each operation, in the order given. Operations already settled are
   * returned as they are; the others are read in one shared pass (per-operation: each by id).
   */
  async refresh(
    operations: readonly (Operation | string)[],
    { pollIntervalMs = 4_000, source }: RefreshOptions,
  ): Promise<Operation[]> {
    const pending = operations.filter((op) => typeof op === "string" || !isSettled(op));
    if (this.polling === "per-operation") {
      return Promise.all(
        operations.map(async (op) =>
          typeof op !== "string" && isSettled(op)
            ? op
            : source.getOperation(this.projectId, typeof op === "string" ? op : op.id),
        ),
      );
    }
    const latest =
      pending.length > 0
        ? await this.latest(pending, pollIntervalMs, source)
        : new Map<string, Operation | Error>();
    return Promise.all(
      operations.map(async (op) => {
        if (typeof op !== "string" && isSettled(op)) return op;
        const found = latest.get(idOf(op));
        if (found instanceof Error) return this.failed(found, idOf(op), source);
        if (found) return found;
        // Only while busy: a change's operation the last pass did not see is reported as given.
        if (typeof op !== "string") return op;
        throw new Error(`operation ${op} was not settled by the tracker`);
      }),
    );
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
    // Callers look on shared ticks of their poll interval; a pass begun since the current tick
    // began answers them all, however long the tick's reconciles take to get here.
    const now = this.now();
    const since = busy
      ? now - pollIntervalMs * this.busyFactor
      : Math.floor(now / pollIntervalMs) * pollIntervalMs;
    const startedAt = last?.startedAt;
    // Before one of them is due to have ended a list could only show them running: a resource
    // woken by its own status write right after its change is answered as it knew them.
    if (!pending.some((op) => typeof op === "string" || this.dueAt(op) <= now)) return this.settled;
    if (busy && pending.every((op) => typeof op !== "string")) {
      // While the project's changes wait for their turn, a poll never waits for a list (nor holds
      // a worker that a change's turn needs): it is answered from the latest pass that ended, or
      // as the caller last knew, and a pass older than the window is renewed for the next poll.
      if (startedAt === undefined || startedAt < since) {
        void this.join(pending, source).result.catch(() => undefined);
      }
      return this.settled;
    }
    if (last && startedAt !== undefined && startedAt >= since) {
      const seen = await last.result;
      const known = (op: Operation | string): boolean => {
        const record = seen.get(idOf(op));
        if (record === undefined || record instanceof Error) return busy && typeof op !== "string";
        // Seen running by a pass that looked before it was due to finish, and it is due now: the
        // caller woke for that moment (its first look after a change), so look again.
        if (!busy && !isSettled(record)) {
          const dueAt = Date.parse(record.createdAt) + (this.expectedDuration(record) ?? 0);
          if (startedAt < dueAt && now >= dueAt) return false;
        }
        return true;
      };
      if (pending.every(known)) return seen;
    }
    return this.join(pending, source).result;
  }

  /**
   * When an operation is due to have ended: its usual duration after its start (unknown: 1 s).
   * One that started after now by this clock (the platform's runs ahead) is due now: a skewed
   * clock must not hold a look back.
   */
  private dueAt(op: Operation): number {
    const created = Date.parse(op.createdAt);
    if (Number.isNaN(created) || created > this.now()) return Number.NEGATIVE_INFINITY;
    return created + (this.expectedDuration(op) ?? unknownDurationMs);
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
    this.observed(
      [...found.values()].filter((op): op is Operation => !(op instanceof Error)),
      listedAt,
    );
    if (this.settled.size === 0 || listedAt >= this.settledAt) {
      this.settled = found;
      this.settledAt = listedAt;
    }
    return found;
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
    if (outcome.state !== "running" || performance.now() + pollIntervalMs > deadline) return outcome;
    current = latest;
    await setTimeout(pollIntervalMs, undefined, { signal: options.signal });
  }
}
