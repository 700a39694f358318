// A work queue with client-go's semantics: one entry per key; a key handed to
// a worker is not handed out again until `done`; a request that arrives while
// it is being processed runs right after; delayed requests keep the earliest
// time; failures back off per key with jitter, reset by `forget`.
// Ready keys go out by priority, then in arrival order (controller-runtime's
// priority queue): the initial list and resyncs queue every key at `lowPriority`,
// so in a storm a change or a due poll does not wait behind hundreds of them; a
// requeue the reconciler asked for (a poll, a turn in a busy project) comes due at
// `duePriority`, so it does not wait behind the first reconciles of a storm of new
// objects either. A key asked for again at a higher priority moves up; never down.

/**
 * Priority of a requeue the reconciler asked for, once due: the poll of a running change, the
 * turn the platform client handed back. It was promised a time; a storm of new objects must not
 * push it minutes later (their first reconciles are what fills those turns in the first place).
 */
export const duePriority = 10;

/** The longest delay Node's timers take as given (2^31 - 1 ms, about 24.8 days). */
const maxTimerMs = 2_147_483_647;
/** Priority of watch events and retries: the default. */
export const normalPriority = 0;
/** Priority of the initial list and of resyncs: everything else goes first. */
export const lowPriority = -100;

export interface BackoffOptions {
  /** First retry delay. */
  baseDelayMs?: number;
  /** Upper bound of the exponential delay. */
  maxDelayMs?: number;
  /** Random source in [0, 1), injectable for tests. */
  random?: () => number;
}

/** Exponential delay with "equal jitter": half fixed, half random, so retries of many keys spread out. */
export function backoffDelay(failures: number, options: BackoffOptions = {}): number {
  const base = options.baseDelayMs ?? 5;
  const max = options.maxDelayMs ?? 300_000;
  const random = options.random ?? Math.random;
  const exp = Math.min(max, base * 2 ** Math.min(failures, 52));
  return exp / 2 + (random() * exp) / 2;
}

/** Spreads a period by up to `fraction` of itself, so periodic work of many replicas does not align. */
export function jittered(ms: number, fraction = 0.1, random: () => number = Math.random): number {
  return ms * (1 + fraction * random());
}

export interface WorkQueueHooks {
  /** Called whenever the number of waiting (ready) keys changes. */
  depth?(depth: number): void;
  /** Time between a key becoming ready and a worker taking it. */
  waited?(ms: number): void;
  /** A key became ready, or was requested again while being processed (client-go's adds). */
  added?(): void;
  /** A request for later (a backoff, a requeue after a time); client-go counts these as retries. */
  retried?(): void;
  /** Time between a worker taking a key and calling `done`. */
  worked?(ms: number): void;
}

export interface WorkQueueOptions extends BackoffOptions {
  hooks?: WorkQueueHooks;
  now?: () => number;
}

interface Request {
  /** When the key is due (now for an immediate request). */
  due: number;
  priority: number;
}

export class WorkQueue<K = string> {
  /** Ready keys by priority, each in FIFO order with the time it became ready. */
  private readonly ready = new Map<number, Map<K, number>>();
  /** Priority of each ready key. */
  private readonly readyPriority = new Map<K, number>();
  /** Keys waiting for a time. */
  private readonly delayed = new Map<K, Request>();
  private readonly processing = new Set<K>();
  /** When each key being processed was handed out (for work duration and stuck-work metrics). */
  private readonly started = new Map<K, number>();
  /** Keys requested while processing: the follow-up, earliest time and highest priority. */
  private readonly dirty = new Map<K, Request>();
  private readonly failures = new Map<K, number>();
  private readonly waiters: ((key: K | undefined) => void)[] = [];
  private readonly idleWaiters: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Infinity;
  private shuttingDown = false;
  private readonly options: WorkQueueOptions;
  private readonly now: () => number;

  constructor(options: WorkQueueOptions = {}) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  /** Keys ready to be handed out. */
  get depth(): number {
    return this.readyPriority.size;
  }

  /** Keys being processed right now. */
  get inFlight(): number {
    return this.processing.size;
  }

  /** Requests processing of `key` as soon as possible. */
  add(key: K, priority = normalPriority): void {
    this.addAt(key, { due: this.now(), priority });
  }

  /** Requests processing of `key` after `ms`; an earlier pending request wins. */
  addAfter(key: K, ms: number, priority = normalPriority): void {
    if (!this.shuttingDown) this.options.hooks?.retried?.();
    this.addAt(key, { due: this.now() + Math.max(0, ms), priority });
  }

  /**
   * Requests a retry after the key's next backoff delay; `fromMs` starts this failure's doubling
   * from a floor of its own (a refusal that lasts a while is not retried within milliseconds), and
   * `maxMs` bounds it (a refusal that waits for the world to change is looked at every so often).
   */
  addRateLimited(key: K, fromMs?: number, maxMs?: number): void {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const options = {
      ...this.options,
      ...(fromMs === undefined ? {} : { baseDelayMs: fromMs }),
      ...(maxMs === undefined ? {} : { maxDelayMs: maxMs }),
    };
    this.addAfter(key, backoffDelay(failures, options));
  }

  /** Clears the key's failure count (after a success). */
  forget(key: K): void {
    this.failures.delete(key);
  }

  failureCount(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  private addAt(key: K, request: Request): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      const pending = this.dirty.get(key);
      if (pending === undefined) this.options.hooks?.added?.();
      this.dirty.set(key, pending ? merge(pending, request) : request);
      return;
    }
    const readyAt = this.readyPriority.get(key);
    if (readyAt !== undefined) {
      if (request.priority > readyAt) this.raise(key, readyAt, request.priority);
      return;
    }
    const pending = this.delayed.get(key);
    if (pending !== undefined && pending.due <= request.due) {
      // The earlier request stands; a higher priority carries over to it.
      if (request.priority > pending.priority) pending.priority = request.priority;
      return;
    }
    // The earlier request replaces the later one, with its own priority: it is the reason to run.
    if (request.due <= this.now()) {
      this.delayed.delete(key);
      this.makeReady(key, request.priority);
    } else {
      this.delayed.set(key, request);
      this.armTimer();
    }
  }

  /** Moves a ready key up to a higher priority, behind the keys already there. */
  private raise(key: K, from: number, to: number): void {
    const readyAt = this.ready.get(from)?.get(key) ?? this.now();
    this.bucket(from).delete(key);
    this.bucket(to).set(key, readyAt);
    this.readyPriority.set(key, to);
  }

  private bucket(priority: number): Map<K, number> {
    let bucket = this.ready.get(priority);
    if (!bucket) {
      bucket = new Map();
      this.ready.set(priority, bucket);
    }
    return bucket;
  }

  private makeReady(key: K, priority: number): void {
    this.options.hooks?.added?.();
    const waiter = this.waiters.shift();
    if (waiter) {
      this.processing.add(key);
      this.started.set(key, this.now());
      this.options.hooks?.waited?.(0);
      waiter(key);
      return;
    }
    this.bucket(priority).set(key, this.now());
    this.readyPriority.set(key, priority);
    this.options.hooks?.depth?.(this.readyPriority.size);
  }

  private armTimer(): void {
    let next = Infinity;
    for (const { due } of this.delayed.values()) if (due < next) next = due;
    if (next === this.timerDue) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDue = next;
    if (next === Infinity) return;
    // Node fires a timer longer than 2^31 - 1 ms after 1 ms: a key due in weeks (a branch's
    // expiry) would spin. Past that the timer wakes early, finds nothing due, and is set again.
    this.timer = setTimeout(() => this.promoteDue(), Math.min(maxTimerMs, Math.max(0, next - this.now())));
  }

  private promoteDue(): void {
    this.timer = undefined;
    this.timerDue = Infinity;
    const now = this.now();
    for (const [key, request] of [...this.delayed]) {
      if (request.due <= now) {
        this.delayed.delete(key);
        this.makeReady(key, request.priority);
      }
    }
    this.armTimer();
  }

  /** Waits for the next ready key and marks it processing; undefined once shut down. */
  get(): Promise<K | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const first = this.next();
    if (first) {
      const [key, readyAt] = first;
      this.ready.get(this.readyPriority.get(key)!)?.delete(key);
      this.readyPriority.delete(key);
      this.processing.add(key);
      this.started.set(key, this.now());
      this.options.hooks?.depth?.(this.readyPriority.size);
      this.options.hooks?.waited?.(this.now() - readyAt);
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The first ready key of the highest priority that has one. */
  private next(): [K, number] | undefined {
    let best: Map<K, number> | undefined;
    let bestPriority = -Infinity;
    for (const [priority, bucket] of this.ready) {
      if (bucket.size > 0 && priority > bestPriority) {
        best = bucket;
        bestPriority = priority;
      }
    }
    const first = best?.entries().next();
    return first && !first.done ? first.value : undefined;
  }

  /** Marks `key` finished; a request that arrived meanwhile is queued now. */
  done(key: K): void {
    this.processing.delete(key);
    const started = this.started.get(key);
    this.started.delete(key);
    if (started !== undefined) this.options.hooks?.worked?.(this.now() - started);
    const pending = this.dirty.get(key);
    this.dirty.delete(key);
    if (pending !== undefined && !this.shuttingDown) this.addAt(key, pending);
    if (this.processing.size === 0) for (const idle of this.idleWaiters.splice(0)) idle();
  }

  /** Stops handing out keys and drops pending requests; keys in flight may still call `done`. */
  shutDown(): void {
    this.shuttingDown = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.ready.clear();
    this.readyPriority.clear();
    this.delayed.clear();
    this.dirty.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
    this.options.hooks?.depth?.(0);
  }

  /** Shuts down and waits until every key in flight is done, or until `deadlineMs` passes; true when drained. */
  async drain(deadlineMs: number): Promise<boolean> {
    this.shutDown();
    if (this.processing.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(true))),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), deadlineMs))),
    ]);
    clearTimeout(timer);
    return drained;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Seconds of work in progress, summed and the longest (client-go's stuck-work gauges). */
  unfinishedWork(): { unfinishedWorkSeconds: number; longestRunningProcessorSeconds: number } {
    const now = this.now();
    let sum = 0;
    let longest = 0;
    for (const since of this.started.values()) {
      sum += now - since;
      longest = Math.max(longest, now - since);
    }
    return { unfinishedWorkSeconds: sum / 1000, longestRunningProcessorSeconds: longest / 1000 };
  }
}

/** Two requests for one key: the earlier time, the higher priority. */
function merge(a: Request, b: Request): Request {
  return { due: Math.min(a.due, b.due), priority: Math.max(a.priority, b.priority) };
}
