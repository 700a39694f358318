/**
 * How long the platform's operations take, learned from the finished ones the client waited on.
 * A controller that knows a start_compute usually takes 2 s looks again after 2 s instead of on
 * its next poll tick, which may be up to one and a half poll intervals away. The spread (mean
 * absolute deviation) tells the project's mutation gate how much later than usual one may end.
 *
 * What is learned is each operation's **own** time. The operations one request starts run one
 * after another (a resize: apply_config, suspend_compute, start_compute), all created at the
 * request, and `total_duration_ms` counts from creation: the third one's includes its wait behind
 * the first two. Its own time runs from the end of the one before it in its chain (same branch,
 * created with it) to its own end.
 */
import { remember } from "./bounded.ts";
import { isSettled } from "./operations.ts";
import type { Operation } from "./schemas.ts";

/** Weight of the newest observation in the running averages. */
const weight = 0.2;

/** Recent durations kept per action, for the shares (quantiles) the mutation gate times itself by. */
const recentSize = 64;

/** Below this many recent durations a share is estimated from the mean and spread instead. */
const minSamplesForShares = 8;

/**
 * The least spread taken while few durations are known, as a share of the mean: a handful of
 * samples says little about the tail. Where a guess too early costs a 423 and a turn (the
 * mutation gate, a storm's one look), 15%; for the second look at a change alone in its project,
 * where too early costs one more look and too late is the user's wait, 10% (at 15% that look
 * came at 1.3× the mean, and saw a lone suspend of 2 s ± 25% 0.55 s after its end at the median).
 */
export const cautiousSpread = 0.15;
export const lookSpread = 0.1;

/**
 * Operations created this close together on one branch came from one request (a chain): the
 * platform's timestamps have whole seconds, so a chain's operations share their second.
 */
const sameRequestMs = 1_000;

/** Recent ends kept per branch, to find a chained operation's predecessor. */
const endsKept = 16;

type Observed = Pick<Operation, "action" | "status" | "createdAt" | "updatedAt"> & {
  id?: string;
  retryAt?: string | undefined;
  totalDurationMs?: number | undefined;
  branchId?: string | undefined;
  projectId?: string | undefined;
};

interface Ended {
  createdAt: number;
  end: number;
}

interface Typical {
  mean: number;
  spread: number;
  /** The latest durations, oldest first (at most `recentSize`). */
  recent: number[];
}

/** Operations followed while they run at most (a bounded map: what it holds is only a correction). */
const runningKept = 1_000;

/**
 * A time a 423 proved counts at most this many times the mean of those seen: an operation the
 * platform retries, or one stuck, is no guide to the others' length.
 */
const provenCap = 2;

export class OperationDurations {
  private readonly now: () => number;
  private readonly typical = new Map<string, Typical>();
  /**
   * Operations of one-operation changes still running: id -> action and start (this clock). Of a
   * storm's operations, the first seen to finish are its quickest; the ones still running say
   * how much longer the others take (see `endedBy`).
   */
  private readonly running = new Map<string, { action: string; at: number }>();
  /**
   * Operations a 423 proved still running this long after they started, whose own time no list
   * has shown yet: id -> action and the time proved (see `outlasted`).
   */
  private readonly outlasting = new Map<string, { action: string; ms: number }>();
  /** Changes in flight: the id of each one's last operation -> when it started (this clock). */
  private readonly changes = new Map<string, number>();
  /** Operations already learned from: every list shows a finished one again. */
  private readonly seen = new Set<string>();
  /** Ends of recently learned operations per branch (or project): the predecessors in a chain. */
  private readonly ends = new Map<string, Ended[]>();

  constructor(options: { now?: () => number } = {}) {
    this.now = options.now ?? (() => Date.now());
  }

  /**
   * A change started these operations now: it counts as in flight until its last one is seen to
   * end (`inFlight`), and a change of one operation is followed while it runs.
   */
  started(operations: readonly Pick<Operation, "id" | "action">[]): void {
    const last = operations.at(-1);
    if (last === undefined) return;
    remember(this.changes, last.id, this.now(), runningKept);
    if (operations.length !== 1) return;
    const [op] = operations as [Pick<Operation, "id" | "action">];
    remember(this.running, op.id, { action: op.action, at: this.now() }, runningKept);
  }

  /**
   * The platform refused a change of the project with 423 this long after the operation of its
   * last change started: it was still running then (the project's lock), so it takes at least
   * that. While few durations are known this counts (`endedBy`): a first one seen short (0.6 s of
   * 1 s ± 50%) otherwise released every turn into the lock until lists had taught more. A change
   * of several operations says nothing of which one ran long, and is not taken.
   */
  outlasted(operations: readonly Pick<Operation, "id" | "action">[], ms: number): void {
    if (operations.length !== 1 || !(ms > 0)) return;
    const [op] = operations as [Pick<Operation, "id" | "action">];
    const before = this.outlasting.get(op.id)?.ms ?? 0;
    remember(this.outlasting, op.id, { action: op.action, ms: Math.max(ms, before) }, runningKept);
  }

  /**
   * Changes of the account started within the last `withinMs` whose last operation was not seen
   * to end (one that is never seen ages out: a bounded, approximate count).
   */
  inFlight(withinMs = 30_000): number {
    const since = this.now() - withinMs;
    let n = 0;
    for (const at of this.changes.values()) if (at >= since) n++;
    return n;
  }

  /** These operations have ended (a later change was accepted, or a list showed them settled). */
  ended(ids: Iterable<string>): void {
    for (const id of ids) {
      this.running.delete(id);
      this.changes.delete(id);
    }
  }

  /**
   * Learns from many operations (a list, a change's chain): earlier ends first, so each chained
   * operation's predecessor is known when its own time is worked out.
   */
  observeAll(operations: readonly Observed[]): void {
    this.ended(operations.filter((op) => op.id !== undefined && isSettled(op)).map((op) => op.id!));
    const endOf = (op: Observed) => Date.parse(op.createdAt) + (op.totalDurationMs ?? 0);
    const finished = operations.filter((op) => op.status === "finished");
    for (const op of finished.sort((a, b) => endOf(a) - endOf(b))) this.observe(op);
  }

  /**
   * Learns from an operation, once per id; only finished ones with sane times count. A chained
   * operation counts from its predecessor's end (observe the predecessor first: `observeAll`).
   */
  observe(operation: Observed): void {
    // Its own time (or its failure) is shown now: what a 423 proved of it no longer stands in.
    if (operation.id !== undefined && isSettled(operation)) this.outlasting.delete(operation.id);
    if (operation.status !== "finished") return;
    if (operation.id !== undefined) {
      if (this.seen.has(operation.id)) return;
      // Bounded: an operation seen again after a clear counts twice, which does no harm.
      if (this.seen.size >= 10_000) this.seen.clear();
      this.seen.add(operation.id);
    }
    const created = Date.parse(operation.createdAt);
    // total_duration_ms when the platform sends it: its timestamps have whole seconds only.
    const total = operation.totalDurationMs ?? Date.parse(operation.updatedAt) - created;
    if (!Number.isFinite(total) || total < 0) return;
    this.learn(operation.action, this.ownTime(operation, created, total));
  }

  /**
   * The operation's own time: from the end of the one before it in its chain (same branch,
   * created with it, ended before it), or from its creation.
   */
  private ownTime(operation: Observed, created: number, total: number): number {
    if (Number.isNaN(created)) return total;
    const key = operation.branchId ?? operation.projectId ?? "";
    const end = created + total;
    const ends = this.ends.get(key) ?? [];
    let start = created;
    for (const e of ends) {
      if (Math.abs(e.createdAt - created) < sameRequestMs && e.end <= end && e.end > start) start = e.end;
    }
    ends.push({ createdAt: created, end });
    if (ends.length > endsKept) ends.shift();
    // Bounded like `seen`: a chain split by a clear learns its total once.
    remember(this.ends, key, ends, 10_000);
    return end - start;
  }

  private learn(action: string, ms: number): void {
    const before = this.typical.get(action);
    if (before === undefined) {
      this.typical.set(action, { mean: ms, spread: 0, recent: [ms] });
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
  endedBy(
    operations: readonly Pick<Operation, "action">[],
    share: number,
    minSpread = cautiousSpread,
  ): number | undefined {
    let total = 0;
    for (const op of operations) {
      const typical = this.typical.get(op.action);
      if (typical === undefined) return undefined;
      if (typical.recent.length >= minSamplesForShares) {
        const sorted = [...typical.recent].sort((a, b) => a - b);
        total += sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
      } else {
        // The plain mean and mean deviation of those seen: the running average starts at the
        // first duration and follows slowly, so a short first one would release the gate early
        // for many turns (each a 423). Operations still running past that mean count at their
        // time so far: the first of a storm seen to finish are its quickest.
        const seenMean = typical.recent.reduce((a, b) => a + b, 0) / typical.recent.length;
        const times = [...typical.recent, ...this.longerThanSeen(op.action, seenMean)];
        const mean = times.reduce((a, b) => a + b, 0) / times.length;
        const deviation = times.reduce((a, ms) => a + Math.abs(ms - mean), 0) / times.length;
        const spread = Math.max(deviation, mean * minSpread);
        total += mean + spread * Math.max(0, 4 * share - 2);
      }
    }
    return total;
  }

  /**
   * Times so far of the action's operations still running past the mean of those seen to finish,
   * while several run at once, at most a quarter longer than it: one may have ended unseen (its
   * project's next change not yet accepted), and its time so far must not grow the others' waits
   * without bound (a longer wait of theirs would keep theirs running unseen longer). A time a 423
   * proved (`outlasted`) is certain, and counts up to `provenCap` times the mean, alone or not.
   */
  private longerThanSeen(action: string, mean: number): number[] {
    const now = this.now();
    const times = new Map<string, number>();
    let running = 0;
    for (const [id, op] of this.running) {
      if (op.action !== action) continue;
      running++;
      const ms = now - op.at;
      if (ms > mean) times.set(id, Math.min(ms, 1.25 * mean));
    }
    // One alone (a single change, or a project's line) biases nothing: none ended before it.
    if (running <= 1) times.clear();
    for (const [id, proof] of this.outlasting) {
      if (proof.action !== action || proof.ms <= mean) continue;
      times.set(id, Math.max(times.get(id) ?? 0, Math.min(proof.ms, provenCap * mean)));
    }
    return [...times.values()];
  }

  /**
   * A stand-in for `endedBy` where an action has never been seen to finish: such an action is
   * taken to last as long as the longest known one (operations of one platform take similar
   * times, far closer than a fixed guess). Undefined while no action at all is known.
   */
  borrowedEndedBy(
    operations: readonly Pick<Operation, "action">[],
    share: number,
    minSpread = cautiousSpread,
  ): number | undefined {
    let longest: number | undefined;
    for (const action of this.typical.keys()) {
      const ms = this.endedBy([{ action }], share, minSpread);
      if (ms !== undefined && (longest === undefined || ms > longest)) longest = ms;
    }
    if (longest === undefined) return undefined;
    let total = 0;
    for (const op of operations) total += this.endedBy([op], share, minSpread) ?? longest;
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
