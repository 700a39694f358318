/**
 * The account's request budget. The platform allows 700 requests per minute per account and
 * bursts of 40 requests per second per route (platform-facts.md); a 429 costs a round trip and
 * a requeue, so the client spends its budget itself instead of discovering the limit.
 *
 * Three constraints, all of which must allow a request before it is sent:
 * - a pacing bucket refilled at perMinute/60 per second, holding a quarter of the minute's
 *   budget (`firstBurst`): a short storm goes at the platform's per-route burst (40 a second),
 *   a long one at an even pace after it, never 700 requests in the first seconds;
 * - a sliding log of the last minute of grants (window widened by a margin), so no window the
 *   platform could measure ever holds more than perMinute requests;
 * - a sliding log per route of the last second of grants (also widened).
 * Logs make the budget safe whatever window the platform uses (fixed, sliding or token bucket).
 *
 * Mutations wait in a queue ahead of reads, and reads may not use the last `reservedForMutations`
 * share of the minute, so polling thousands of resources never starves a create or a delete. A
 * read that has waited `readMaxDelayMs` goes first all the same: in a long create storm the
 * operation polls (which the tracker already rations) would otherwise wait until every worker
 * was stuck on one, stalling the creates too.
 */
import { RateLimitedError } from "./errors.ts";

export interface RateLimits {
  /** Requests per minute for the whole account (platform: 700). */
  perMinute: number;
  /** Requests per second per route (platform: 40). */
  burstPerSecondPerRoute: number;
  /** Capacity of the pacing bucket: how many requests may leave at once. Default: `firstBurst(perMinute)`. */
  accountBurst?: number;
  /** Share of perMinute that reads may not use, kept for mutations. Default 0.1. */
  reservedForMutations?: number;
  /** Added to each window so network jitter cannot squeeze one window's grants into another. */
  marginMs?: number;
  /** A request that waited this long for the budget fails with RateLimitedError. Default 60 s. */
  maxWaitMs?: number;
  /** A read that waited this long goes before queued mutations. Default 1 s. */
  readMaxDelayMs?: number;
}

export const PLATFORM_RATE_LIMITS: RateLimits = { perMinute: 700, burstPerSecondPerRoute: 40 };

/**
 * The pacing bucket's capacity: a quarter of the minute's budget (175 of 700). It held the
 * route's burst (40) until issue 35, and a storm's 300 creates waited for the even pace (22 s
 * where the platform admits them in 6.5 s): 300 over 15 at 1 s took 1.43× the floor, 100
 * endpoints each in a project of its own 7.9×. The minute's log still holds every window to
 * the budget, and the route's log each second to 40; a shard's share scales it.
 */
export function firstBurst(perMinute: number): number {
  return Math.max(1, Math.floor(perMinute / 4));
}

/** The platform's limits scaled to one instance's share of an account (shards acting on one account). */
export function accountShare(share: number): RateLimits {
  return {
    perMinute: Math.max(1, Math.floor(PLATFORM_RATE_LIMITS.perMinute * share)),
    burstPerSecondPerRoute: Math.max(1, Math.floor(PLATFORM_RATE_LIMITS.burstPerSecondPerRoute * share)),
  };
}

export type RequestKind = "read" | "mutation";

interface Waiter {
  route: string;
  kind: RequestKind;
  enqueuedAt: number;
  resolve: (waitedMs: number) => void;
  reject: (error: unknown) => void;
  cleanup: () => void;
}

/** Timestamps of recent grants, oldest first; old entries are dropped lazily. */
class GrantLog {
  private readonly times: number[] = [];
  private head = 0;
  private readonly windowMs: number;

  constructor(windowMs: number) {
    this.windowMs = windowMs;
  }

  private prune(now: number): void {
    while (this.head < this.times.length && this.times[this.head]! <= now - this.windowMs) this.head++;
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Earliest time at which one more grant keeps the window at or below `cap`. */
  earliest(now: number, cap: number): number {
    this.prune(now);
    const count = this.times.length - this.head;
    if (count < cap) return now;
    if (cap <= 0) return Number.POSITIVE_INFINITY;
    return this.times[this.head + count - cap]! + this.windowMs;
  }

  record(now: number): void {
    this.times.push(now);
  }
}

export class RateBudget {
  readonly limits: Required<RateLimits>;
  private readonly now: () => number;
  private readonly minuteLog: GrantLog;
  private readonly routeLogs = new Map<string, GrantLog>();
  private tokens: number;
  private refilledAt: number;
  private pausedUntil = 0;
  private readonly mutations: Waiter[] = [];
  private readonly reads: Waiter[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  /** When a mutation last had to wait for the budget. */
  private mutationWaitedAt = Number.NEGATIVE_INFINITY;

  constructor(limits: Partial<RateLimits> = {}, now: () => number = () => performance.now()) {
    const perMinute = limits.perMinute ?? PLATFORM_RATE_LIMITS.perMinute;
    const burst = limits.burstPerSecondPerRoute ?? PLATFORM_RATE_LIMITS.burstPerSecondPerRoute;
    this.limits = {
      perMinute,
      burstPerSecondPerRoute: burst,
      accountBurst: limits.accountBurst ?? firstBurst(perMinute),
      reservedForMutations: limits.reservedForMutations ?? 0.1,
      marginMs: limits.marginMs ?? 100,
      maxWaitMs: limits.maxWaitMs ?? 60_000,
      readMaxDelayMs: limits.readMaxDelayMs ?? 1_000,
    };
    this.now = now;
    this.minuteLog = new GrantLog(60_000 + this.limits.marginMs);
    this.tokens = this.limits.accountBurst;
    this.refilledAt = now();
  }

  /** Number of requests waiting for the budget. */
  get waiting(): number {
    return this.mutations.length + this.reads.length;
  }

  /**
   * True while changes queue for the budget (or did within `withinMs`): the account is spending
   * its requests on mutations, and readers that can wait (operation polling) should look less
   * often so as not to slow them down.
   */
  busyWithMutations(withinMs = 2_000): boolean {
    return this.mutations.length > 0 || this.now() - this.mutationWaitedAt < withinMs;
  }

  /**
   * Waits until a request on `route` may be sent and records it as sent.
   * Resolves with the milliseconds spent waiting.
   */
  acquire(route: string, kind: RequestKind, signal?: AbortSignal): Promise<number> {
    signal?.throwIfAborted();
    const enqueuedAt = this.now();
    if (this.waiting === 0 && this.earliestFor(route, kind, enqueuedAt) <= enqueuedAt) {
      this.grant(route, enqueuedAt);
      return Promise.resolve(0);
    }
    if (kind === "mutation") this.mutationWaitedAt = enqueuedAt;
    return new Promise<number>((resolve, reject) => {
      const queue = kind === "mutation" ? this.mutations : this.reads;
      const onAbort = (): void => {
        this.remove(waiter);
        reject(
          signal?.reason instanceof Error ? signal.reason : new Error("aborted", { cause: signal?.reason }),
        );
      };
      const giveUp = setTimeout(() => {
        this.remove(waiter);
        reject(
          new RateLimitedError(`${route}: the account's request budget could not grant a request in time`, {
            route,
            status: 429,
            code: "client_rate_budget",
            retryAfterMs: 1_000,
          }),
        );
      }, this.limits.maxWaitMs);
      const waiter: Waiter = {
        route,
        kind,
        enqueuedAt,
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(giveUp);
          signal?.removeEventListener("abort", onAbort);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      queue.push(waiter);
      this.pump();
    });
  }

  /**
   * Holds every grant for `ms`: called when the platform answered 429 anyway (console traffic
   * counts against the same limit), so the whole account backs off, not just one request.
   */
  pause(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, this.now() + ms);
    this.schedule(this.pausedUntil);
  }

  private remove(waiter: Waiter): void {
    waiter.cleanup();
    for (const queue of [this.mutations, this.reads]) {
      const index = queue.indexOf(waiter);
      if (index >= 0) queue.splice(index, 1);
    }
  }

  private routeLog(route: string): GrantLog {
    let log = this.routeLogs.get(route);
    if (!log) {
      log = new GrantLog(1_000 + this.limits.marginMs);
      this.routeLogs.set(route, log);
    }
    return log;
  }

  private refill(now: number): void {
    const perMs = this.limits.perMinute / 60_000;
    this.tokens = Math.min(this.limits.accountBurst, this.tokens + (now - this.refilledAt) * perMs);
    this.refilledAt = now;
  }

  /** Earliest time the account-wide constraints allow one more request of this kind. */
  private accountEarliest(kind: RequestKind, now: number): number {
    this.refill(now);
    const pacing = this.tokens >= 1 ? now : now + (1 - this.tokens) / (this.limits.perMinute / 60_000);
    const cap =
      kind === "mutation"
        ? this.limits.perMinute
        : Math.max(1, Math.floor(this.limits.perMinute * (1 - this.limits.reservedForMutations)));
    return Math.max(this.pausedUntil, pacing, this.minuteLog.earliest(now, cap));
  }

  private earliestFor(route: string, kind: RequestKind, now: number): number {
    const routeAt = this.routeLog(route).earliest(now, this.limits.burstPerSecondPerRoute);
    return Math.max(this.accountEarliest(kind, now), routeAt);
  }

  private grant(route: string, now: number): void {
    this.tokens -= 1;
    this.minuteLog.record(now);
    this.routeLog(route).record(now);
  }

  private pump(): void {
    const now = this.now();
    let next = Number.POSITIVE_INFINITY;
    const overdue = (this.reads[0]?.enqueuedAt ?? now) <= now - this.limits.readMaxDelayMs;
    for (const queue of overdue ? [this.reads, this.mutations] : [this.mutations, this.reads]) {
      for (let i = 0; i < queue.length;) {
        const waiter = queue[i]!;
        const account = this.accountEarliest(waiter.kind, now);
        if (account > now) {
          // Nothing else of this kind can go before the account allows it.
          next = Math.min(next, account);
          break;
        }
        const at = this.routeLog(waiter.route).earliest(now, this.limits.burstPerSecondPerRoute);
        if (at > now) {
          next = Math.min(next, at);
          i++;
          continue;
        }
        this.grant(waiter.route, now);
        queue.splice(i, 1);
        waiter.cleanup();
        waiter.resolve(now - waiter.enqueuedAt);
      }
    }
    if (this.waiting > 0) this.schedule(next);
  }

  private schedule(at: number): void {
    if (!Number.isFinite(at) || (this.timer && this.timerAt <= at)) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.pump();
      },
      Math.max(0, Math.ceil(at - this.now())),
    );
  }
}
