/**
 * How long the platform's operations take, learned from the finished ones the client waited on.
 * A controller that knows a start_compute usually takes 2 s looks again after 2 s instead of on
 * its next poll tick, which may be up to one and a half poll intervals away.
 */
import type { Operation } from "./schemas.ts";

/** Weight of the newest observation in the running average. */
const weight = 0.2;

export class OperationDurations {
  private readonly typical = new Map<string, number>();

  /** Learns from an operation; only finished ones with sane times count. */
  observe(operation: Pick<Operation, "action" | "status" | "createdAt" | "updatedAt">): void {
    if (operation.status !== "finished") return;
    const ms = Date.parse(operation.updatedAt) - Date.parse(operation.createdAt);
    if (!Number.isFinite(ms) || ms < 0) return;
    const before = this.typical.get(operation.action);
    this.typical.set(operation.action, before === undefined ? ms : before * (1 - weight) + ms * weight);
  }

  /**
   * How long a change's operations usually take in all (they run one after another), or
   * undefined while one of their actions has never been seen to finish.
   */
  expected(operations: readonly Pick<Operation, "action">[]): number | undefined {
    let total = 0;
    for (const op of operations) {
      const ms = this.typical.get(op.action);
      if (ms === undefined) return undefined;
      total += ms;
    }
    return total;
  }
}
