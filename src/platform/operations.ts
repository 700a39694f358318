/**
 * Settling operations in bulk. Polling every pending operation by id costs one request each;
 * a project's operation list is ordered newest first, so one paginated pass that stops at the
 * oldest pending operation settles all of them. The list is eventually consistent (an operation
 * just returned by a mutation may be missing), so whatever the pass did not see is read by id.
 * Calls to `refresh` within `batchWindowMs` of each other share one pass.
 */
import { setTimeout } from "node:timers/promises";
import type { Operation } from "./schemas.ts";

export interface OperationsPage {
  operations: Operation[];
  cursor: string | undefined;
}

/** What the tracker needs from the client. */
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
}

const SETTLED = new Set(["finished", "skipped", "failed", "error", "cancelled"]);
const FAILED = new Set(["failed", "error", "cancelled"]);

/** True once an operation will not change any more. */
export function isSettled(operation: Pick<Operation, "status">): boolean {
  return SETTLED.has(operation.status);
}

/** True for a settled operation that did not succeed. */
export function isFailed(operation: Pick<Operation, "status">): boolean {
  return FAILED.has(operation.status);
}

interface Batch {
  /** Pending operation id -> creation time, when known. */
  wanted: Map<string, number | undefined>;
  result: Promise<Map<string, Operation | Error>>;
}

export class OperationsTracker {
  readonly projectId: string;
  private readonly source: OperationsSource;
  private readonly pageSize: number;
  private readonly maxPages: number;
  private readonly batchWindowMs: number;
  private readonly polling: OperationPolling;
  private open: Batch | undefined;

  constructor(source: OperationsSource, projectId: string, options: OperationsTrackerOptions = {}) {
    this.source = source;
    this.projectId = projectId;
    this.pageSize = options.pageSize ?? 100;
    this.maxPages = options.maxPages ?? 5;
    this.batchWindowMs = options.batchWindowMs ?? 10;
    this.polling = options.polling ?? "batched";
  }

  /**
   * The latest record of each operation, in the order given. Operations already settled are
   * returned as they are; the others are read in one shared pass (per-operation: each by id).
   */
  async refresh(operations: readonly (Operation | string)[]): Promise<Operation[]> {
    const pending = operations.filter((op) => typeof op === "string" || !isSettled(op));
    if (this.polling === "per-operation") {
      return Promise.all(
        operations.map(async (op) =>
          typeof op !== "string" && isSettled(op)
            ? op
            : this.source.getOperation(this.projectId, typeof op === "string" ? op : op.id),
        ),
      );
    }
    const batch = pending.length > 0 ? this.join(pending) : undefined;
    const latest = batch ? await batch.result : new Map<string, Operation | Error>();
    return operations.map((op) => {
      if (typeof op !== "string" && isSettled(op)) return op;
      const id = typeof op === "string" ? op : op.id;
      const found = latest.get(id);
      if (found instanceof Error) throw found;
      if (!found) throw new Error(`operation ${id} was not settled by the tracker`);
      return found;
    });
  }

  private join(pending: readonly (Operation | string)[]): Batch {
    if (!this.open) {
      const wanted = new Map<string, number | undefined>();
      const batch: Batch = {
        wanted,
        result: setTimeout(this.batchWindowMs).then(() => {
          if (this.open === batch) this.open = undefined;
          return this.pass(wanted);
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

  private async pass(wanted: Map<string, number | undefined>): Promise<Map<string, Operation | Error>> {
    const found = new Map<string, Operation | Error>();
    const known = [...wanted.values()].filter((t): t is number => t !== undefined && !Number.isNaN(t));
    const oldest = known.length > 0 ? Math.min(...known) : undefined;
    try {
      let cursor: string | undefined;
      for (let page = 0; page < this.maxPages && found.size < wanted.size; page++) {
        const { operations, cursor: next } = await this.source.listOperationsPage(this.projectId, {
          limit: this.pageSize,
          cursor,
        });
        for (const op of operations) if (wanted.has(op.id)) found.set(op.id, op);
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
          found.set(id, await this.source.getOperation(this.projectId, id));
        } catch (error) {
          found.set(id, error instanceof Error ? error : new Error(String(error)));
        }
      }),
    );
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
      failuresCount: number;
      /** When to look again: the poll interval. */
      retryAfterMs: number;
    };

/** Summarises operations: failed wins over running, running over finished. */
export function summarizeOperations(operations: Operation[], pollIntervalMs: number): OperationsOutcome {
  const failuresCount = operations.reduce((sum, op) => sum + op.failuresCount, 0);
  const failed = operations.filter((op) => FAILED.has(op.status));
  if (failed.length > 0) return { state: "failed", operations, failed, failuresCount };
  const running = operations.filter((op) => !isSettled(op));
  if (running.length > 0) {
    return { state: "running", operations, running, failuresCount, retryAfterMs: pollIntervalMs };
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

/** Reports whether the operations finished, failed (with failuresCount) or are still running. */
export async function waitForOperations(
  tracker: OperationsTracker,
  operations: readonly (Operation | string)[],
  options: WaitOptions = {},
): Promise<OperationsOutcome> {
  const pollIntervalMs = options.pollIntervalMs ?? 5_000;
  const deadline = performance.now() + (options.timeoutMs ?? 0);
  let current: readonly (Operation | string)[] = operations;
  for (;;) {
    options.signal?.throwIfAborted();
    const latest = await tracker.refresh(current);
    const outcome = summarizeOperations(latest, pollIntervalMs);
    if (outcome.state !== "running" || performance.now() + pollIntervalMs > deadline) return outcome;
    current = latest;
    await setTimeout(pollIntervalMs, undefined, { signal: options.signal });
  }
}
