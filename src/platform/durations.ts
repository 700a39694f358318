/**
 * How long the platform's operations take, learned from the finished ones the client waited on.
 * A controller that knows a start_compute usually takes 2 s looks again after 2 s instead of on
 * its next poll tick, which may be up to one and a half poll intervals away. The spread (mean
 * absolute deviation) tells the project's mutation gate how much later than usual one may end.
 */
import type { Operation } from "./schemas.ts";

/** Weight of the newest observation in the running averages. */
const weight = 0.2;

interface Typical {
  mean: number;
  spread: number;
}

export class OperationDurations {
  private readonly typical = new Map<string, Typical>();
  /** Operations already learned from: every list shows a finished one again. */
  private readonly seen = new Set<string>();

  /** Learns from an operation, once per id; only finished ones with sane times count. */
  observe(
    operation: Pick<Operation, "action" | "status" | "createdAt" | "updatedAt"> & {
      id?: string;
      totalDurationMs?: number | undefined;
    },
  ): void {
    if (operation.status !== "finished") return;
    if (operation.id !== undefined) {
      if (this.seen.has(operation.id)) return;
      // Bounded: an operation seen again after a clear counts twice, which does no harm.
      if (this.seen.size >= 10_000) this.seen.clear();
      this.seen.add(operation.id);
    }
    // total_duration_ms when the platform sends it: its timestamps have whole seconds only.
    const ms = operation.totalDurationMs ?? Date.parse(operation.updatedAt) - Date.parse(operation.createdAt);
    if (!Number.isFinite(ms) || ms < 0) return;
    const before = this.typical.get(operation.action);
    this.typical.set(
      operation.action,
      before === undefined
        ? { mean: ms, spread: 0 }
        : {
            mean: before.mean * (1 - weight) + ms * weight,
            spread: before.spread * (1 - weight) + Math.abs(ms - before.mean) * weight,
          },
    );
  }

  /**
   * How long a change's operations usually take in all (they run one after another), or
   * undefined while one of their actions has never been seen to finish. With `spreads`, that
   * many mean deviations are added to each: a time by which they have most likely ended.
   */
  expected(operations: readonly Pick<Operation, "action">[], spreads = 0): number | undefined {
    let total = 0;
    for (const op of operations) {
      const typical = this.typical.get(op.action);
      if (typical === undefined) return undefined;
      total += typical.mean + spreads * typical.spread;
    }
    return total;
  }
}
