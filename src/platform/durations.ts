/**
 * How long the platform's operations take, learned from the finished ones the client waited on.
 * A controller that knows a start_compute usually takes 2 s looks again after 2 s instead of on
 * its next poll tick, which may be up to one and a half poll intervals away. The spread (mean
 * absolute deviation) tells the project's mutation gate how much later than usual one may end.
 */
import type { Operation } from "./schemas.ts";

/** Weight of the newest observation in the running averages. */
const weight = 0.2;

/** Recent durations kept per action, for the shares (quantiles) the mutation gate times itself by. */
const recentSize = 64;

/** Below this many recent durations a share is estimated from the mean and spread instead. */
const minSamplesForShares = 8;

interface Typical {
  mean: number;
  spread: number;
  /** The latest durations, oldest first (at most `recentSize`). */
  recent: number[];
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
    if (before === undefined) {
      this.typical.set(operation.action, { mean: ms, spread: 0, recent: [ms] });
      return;
    }
    before.spread = before.spread * (1 - weight) + Math.abs(ms - before.mean) * weight;
    before.mean = before.mean * (1 - weight) + ms * weight;
    before.recent.push(ms);
    if (before.recent.length > recentSize) before.recent.shift();
  }

  /**
   * By when `share` (0..1) of operations like these have ended, from the start of the first (they
   * run one after another): each action's share-quantile of its recent durations, summed. With
   * few durations seen, the mean plus a spread that grows with the share (at least 15% of the
   * mean: a handful of samples says little about the tail). Undefined while an action has never
   * been seen to finish.
   */
  endedBy(operations: readonly Pick<Operation, "action">[], share: number): number | undefined {
    let total = 0;
    for (const op of operations) {
      const typical = this.typical.get(op.action);
      if (typical === undefined) return undefined;
      const { recent } = typical;
      if (recent.length >= minSamplesForShares) {
        const sorted = [...recent].sort((a, b) => a - b);
        total += sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
      } else {
        // The plain mean and mean deviation of those seen: the running average starts at the
        // first duration and follows slowly, so a short first one would release the gate early
        // for many turns (each a 423).
        const mean = recent.reduce((a, b) => a + b, 0) / recent.length;
        const deviation = recent.reduce((a, ms) => a + Math.abs(ms - mean), 0) / recent.length;
        const spread = Math.max(deviation, mean * 0.15);
        total += mean + spread * Math.max(0, 4 * share - 2);
      }
    }
    return total;
  }

  /**
   * A stand-in for `endedBy` where an action has never been seen to finish: such an action is
   * taken to last as long as the longest known one (operations of one platform take similar
   * times, far closer than a fixed guess). Undefined while no action at all is known.
   */
  borrowedEndedBy(operations: readonly Pick<Operation, "action">[], share: number): number | undefined {
    let longest: number | undefined;
    for (const action of this.typical.keys()) {
      const ms = this.endedBy([{ action }], share);
      if (ms !== undefined && (longest === undefined || ms > longest)) longest = ms;
    }
    if (longest === undefined) return undefined;
    let total = 0;
    for (const op of operations) total += this.endedBy([op], share) ?? longest;
    return total;
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
