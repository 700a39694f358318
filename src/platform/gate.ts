/**
 * A project's mutation gate, shared by the clients of every key of its account (project.ts). The
 * platform runs one change of a project at a time: while a
 * project has running operations it refuses new mutations with 423, on any branch
 * (platform-facts.md, "Errors and limits"). Rather than send changes into that lock, the client
 * lets one mutation of a project go at a time, and the next one when the operations the last one
 * started have most likely ended (by when `releaseShare` of such operations end, learned from the
 * finished ones, durations.ts), or as soon as an operations list shows them settled. Operations of
 * other actors that a list shows running hold the project too. A 423 all the same (an operation
 * slower than most, or another actor's change not yet listed) moves the project's next try to
 * when the longest such operation seen would have ended, then further.
 *
 * A caller that names a `ticket` (a controller, for a resource) is never held: a worker that
 * sleeps for one project's turn serves no other project (four workers and twenty projects make
 * that the bottleneck). When its turn has not come it fails at once with ProjectBusyError and
 * `retryAfterMs`, the time its turn is expected. Tickets keep the place in line of their first
 * ask, also across a 423, so each comes back about when its own turn comes rather than all at
 * once; the first in line comes back when the lock should free, so the lock is not left idle.
 * The controller requeues it then. A caller far back in line is told its turn from the turns
 * ahead of it as they were known when it asked; a caller that gives a `wake` is also called when
 * the lock frees while it is first in line and not due back yet, so a turn estimated long before
 * (from durations learned since) leaves no idle lock. A caller without a ticket (a script) waits
 * inside the call.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { LockedError, ProjectBusyError } from "./errors.ts";
import { isSettled } from "./operations.ts";
import type { Operation } from "./schemas.ts";

export interface MutationGateOptions {
  /**
   * By when `share` (0..1) of operations like these have ended, in ms from their start (they run
   * one after another); undefined while their durations are unknown.
   */
  expected: (operations: readonly Operation[], share: number) => number | undefined;
  /**
   * The same for operations whose action was never seen to finish, from the actions that were
   * (undefined while none was). Such a time needs no confirming list: the next mutation probes.
   */
  borrowed?: (operations: readonly Operation[], share: number) => number | undefined;
  /**
   * Share of operations that have ended when the next mutation goes: a later release means fewer
   * 423s, an earlier one less idle lock. Default 0.9: in a storm the account's budget (700
   * requests a minute) is spent on creates, and every 423 is a create that waits (docs/benchmarks.md).
   */
  releaseShare?: number;
  /** Assumed duration of operations when no action was ever seen to finish (a list confirms). Default 1 s. */
  unknownDurationMs?: number;
  /**
   * Shared by the gates of an account's projects (durations are the account's): while no action
   * is known, one project at a time confirms a guessed end with a list, and the others wait for
   * what it learns instead of each listing on the same guessed schedule.
   */
  guesses?: GuessedEnds;
  /**
   * Whether a change the platform accepted proves that every operation the gate knew of has
   * ended (the platform's project-wide lock). Default: no.
   */
  projectWideLock?: () => boolean;
  /**
   * Whether a list is worth sending before the next mutation at its turn (the project's tracker
   * has ends the lock proved whose outcomes no list has read). The list then reads those, shows
   * whether the last change's operations have ended (the next goes at once, or not into a 423),
   * and reads their outcome without waiting for the next change to prove it. Default: never.
   */
  lookFirst?: () => boolean;
  /**
   * A 423 came for a mutation sent this long after the last answer, while only that answer's
   * operations were known to run: they run at least that long (durations.ts, `outlasted`), and
   * the next try and the next turns are timed with it.
   */
  outlasted?: (operations: readonly Operation[], ms: number) => void;
  /** After a 423 the learned durations gave no better time for: the next try this much later (doubling from the third in a row). Default 250 ms. */
  lockedProbeMs?: number;
  /** Longest wait for a turn inside a call with a ticket; beyond it ProjectBusyError is thrown. Default 25 ms. */
  maxInlineWaitMs?: number;
  now?: () => number;
}

export interface GateRunOptions {
  /** Who asks (a resource's key): held back, it is told when its own turn comes. */
  ticket?: string | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Looks at the project's running operations with one list (which reports back through
   * `observe`), with the asking caller's key. Used instead of a probing mutation when their end
   * was only guessed: a list costs a request as a 423 does, and teaches how long operations take.
   */
  confirm?: ((operationIds: readonly string[]) => Promise<unknown>) | undefined;
  /** Brings a ticket's caller back now (its resource reconciled again): used when its turn comes early. */
  wake?: (() => void) | undefined;
}

/** The account's confirmations of guessed ends: one project looks at a time (see `guesses`). */
export class GuessedEnds {
  /** A project of the account is looking now. */
  looking = false;
  /** When the last look said the next one is worth it. */
  nextLookAt = 0;
}

/** What the gate knows of its project. */
interface State {
  /** When the project's known running operations are expected to have ended. */
  busyUntil: number;
  /** A mutation of the project is on its way; the next waits for its answer. */
  sending: boolean;
  /** One caller at a time waits inside a call; the others are handed back. */
  inlineWaiter: boolean;
  /** Callers in line, in the order of their first ask: ticket -> when it was told to come back. */
  waiting: Map<string, number>;
  /** Callers in line that were handed back while another waited too (a line, not a lone change). */
  lined: Set<string>;
  /** How to bring back callers in line that gave a `wake`. */
  wakes: Map<string, () => void>;
  /** Running operations the gate knows of (its own answers and lists): id -> expected end. */
  running: Map<string, number>;
  /** The operations the last answer started, while they may still run. */
  lastOperations: readonly Operation[];
  /** When the last mutation's answer arrived. */
  answeredAt: number;
  /** How long one turn usually lasts. */
  turnMs: number;
  /** 423s in a row. */
  lockedInARow: number;
  /** When a caller was last told to wait for its turn behind another. */
  heldAt: number;
  /** The answer (its time) whose operations a list looked at before the next turn (`lookFirst`): one look a turn. */
  lookedFor: number;
  /** `busyUntil` is a guess (their duration was unknown): a list confirms before a mutation probes. */
  guessed: boolean;
  /** The guess is about the last answer's own operations (durations learned since replace it). */
  guessedOwn: boolean;
}

/** The furthest a 423 moves the project's next try. */
const maxProbeMs = 5_000;

/** The shortest step after a 423: an answer's round trip, so a retry is not sent into the same lock. */
const minProbeMs = 50;

/**
 * Operations whose longest seen ends less than this share of their usual time after the release
 * share's are released at the longest instead: waiting for it costs little (at 6 s ± 10%, about
 * 0.1 s a turn), where a release at 90% met a 423 one turn in ten, each a request.
 */
const tightSpread = 0.05;

/** A caller first in line due back within this much of the lock's freeing is not woken: it comes anyway. */
const wakeMarginMs = 50;

/** A caller that does not come back within this much of its estimated turn loses its place. */
const ticketGraceMs = 15_000;

export class MutationGate {
  readonly projectId: string;
  private readonly p: State;
  private readonly options: MutationGateOptions;
  private readonly unknownMs: number;
  private readonly probeMs: number;
  private readonly maxInlineMs: number;
  private readonly releaseShare: number;
  private readonly now: () => number;
  private anonymous = 0;
  /** Wakes the first in line when the lock is expected to free (`callNext`). */
  private nextTimer: NodeJS.Timeout | undefined;

  constructor(projectId: string, options: MutationGateOptions) {
    this.projectId = projectId;
    this.options = options;
    this.unknownMs = options.unknownDurationMs ?? 1_000;
    this.probeMs = options.lockedProbeMs ?? 250;
    this.maxInlineMs = options.maxInlineWaitMs ?? 25;
    this.releaseShare = options.releaseShare ?? 0.9;
    this.now = options.now ?? (() => Date.now());
    this.p = {
      busyUntil: 0,
      sending: false,
      inlineWaiter: false,
      waiting: new Map(),
      lined: new Set(),
      wakes: new Map(),
      running: new Map(),
      lastOperations: [],
      answeredAt: 0,
      turnMs: this.unknownMs,
      lockedInARow: 0,
      heldAt: Number.NEGATIVE_INFINITY,
      lookedFor: Number.NEGATIVE_INFINITY,
      guessed: false,
      guessedOwn: false,
    };
  }

  /** When the project's next mutation may go (the known running operations' expected end). */
  nextTurnAt(): number {
    return this.p.busyUntil;
  }

  /** How long one turn of the project usually lasts (half of such operations ended by then). */
  turnMs(): number {
    return this.p.turnMs;
  }

  /** The operations the gate takes to be running (its own answers', and lists'). */
  runningIds(): string[] {
    return [...this.p.running.keys()];
  }

  /**
   * Whether the project holds mutations back: its operations tracker then lists less often,
   * leaving the budget to them.
   */
  holding(): boolean {
    const now = this.now();
    return [...this.p.waiting.values()].some((due) => due + ticketGraceMs > now);
  }

  /** Whether changes waited in line within the last `ms` (the project in a storm, or just after one). */
  heldWithin(ms: number): boolean {
    return this.holding() || this.now() - this.p.heldAt <= ms;
  }

  /**
   * Sends `send` when the project's turn comes; `operationsOf` names the operations its answer
   * started (an answer without any frees the project at once).
   */
  async run<T>(
    send: () => Promise<T>,
    operationsOf: (result: T) => readonly Operation[],
    options: GateRunOptions = {},
  ): Promise<T> {
    const p = this.p;
    const ticket = options.ticket ?? `anonymous-${++this.anonymous}`;
    const started = this.now();
    // Its place in line is that of its first ask; it keeps it until it has sent, or gives up.
    if (!p.waiting.has(ticket)) p.waiting.set(ticket, started);
    if (options.ticket !== undefined && options.wake) p.wakes.set(ticket, options.wake);
    try {
      return await this.turn(p, ticket, started, send, operationsOf, options);
    } catch (err) {
      if (!(err instanceof ProjectBusyError)) this.leaveLine(p, ticket);
      throw err;
    }
  }

  /** A caller leaves the line: it has sent, given up, or not come back in time. */
  private leaveLine(p: State, ticket: string): void {
    p.waiting.delete(ticket);
    p.lined.delete(ticket);
    p.wakes.delete(ticket);
  }

  /**
   * When the lock is expected to free (or now, if it has), the first caller in line is woken if it
   * is not due back by then: its told turn counted turns as long as they seemed when it asked.
   */
  private callNext(p: State): void {
    if (this.nextTimer) clearTimeout(this.nextTimer);
    this.nextTimer = undefined;
    if (p.wakes.size === 0 || p.sending) return;
    const now = this.now();
    if (p.busyUntil > now) {
      this.nextTimer = setTimeout(() => this.callNext(p), p.busyUntil - now);
      this.nextTimer.unref();
      return;
    }
    const [first, due] = p.waiting.entries().next().value ?? [];
    const wake = first === undefined ? undefined : p.wakes.get(first);
    if (first === undefined || due === undefined || !wake || due <= now + wakeMarginMs) return;
    // Due now: woken once, and it loses its place as any caller does if it never comes.
    p.waiting.set(first, now);
    wake();
  }

  /** One list of the running operations (`confirm`) while no mutation is on its way; its failure is only a look's. */
  private async look(p: State, confirm: NonNullable<GateRunOptions["confirm"]>): Promise<void> {
    p.sending = true;
    try {
      await confirm([...p.running.keys()]);
    } catch {
      // Only a look: the mutation below probes instead.
    } finally {
      p.sending = false;
    }
  }

  private async turn<T>(
    p: State,
    ticket: string,
    started: number,
    send: () => Promise<T>,
    operationsOf: (result: T) => readonly Operation[],
    options: GateRunOptions,
  ): Promise<T> {
    let locked: LockedError | undefined;
    for (;;) {
      options.signal?.throwIfAborted();
      const now = this.now();
      if (p.guessedOwn) this.learned(p);
      if (!p.sending && p.busyUntil <= now && p.guessed && options.confirm && p.running.size > 0) {
        const guesses = this.options.guesses;
        if (guesses && (guesses.looking || guesses.nextLookAt > now)) {
          // Another project of the account is looking: what it learns serves this one too.
          p.busyUntil = Math.max(now + minProbeMs, guesses.nextLookAt);
          continue;
        }
        p.guessed = false;
        if (guesses) guesses.looking = true;
        await this.look(p, options.confirm);
        if (guesses) {
          guesses.looking = false;
          // Still guessed (nothing learned): the next look is due when this one's is.
          guesses.nextLookAt = p.guessed ? p.busyUntil : 0;
        }
        continue;
      }
      if (
        !p.sending &&
        p.busyUntil <= now &&
        options.confirm &&
        p.running.size > 0 &&
        p.lookedFor !== p.answeredAt &&
        this.options.lookFirst?.()
      ) {
        p.lookedFor = p.answeredAt;
        await this.look(p, options.confirm);
        continue;
      }
      if (!p.sending && p.busyUntil <= now) {
        p.sending = true;
        const sentAt = now;
        let result: T;
        try {
          result = await send();
        } catch (err) {
          p.sending = false;
          if (!(err instanceof LockedError)) {
            this.callNext(p);
            throw err;
          }
          // Something still runs there: try again later, without counting a failure.
          locked = err;
          p.lockedInARow++;
          if (this.onlyOwnRunning(p)) this.options.outlasted?.(p.lastOperations, sentAt - p.answeredAt);
          p.busyUntil = Math.max(p.busyUntil, this.now() + this.afterLocked(p));
          this.callNext(p);
          // A script sees the 423 as before (with the time to retry); a controller's resource waits.
          if (options.ticket === undefined) throw err;
          continue;
        }
        p.sending = false;
        p.lockedInARow = 0;
        // The last change of a line is still part of its storm (looked at once, with the end it proved).
        if (p.lined.has(ticket)) p.heldAt = this.now();
        this.leaveLine(p, ticket);
        this.answered(p, operationsOf(result));
        this.callNext(p);
        return result;
      }
      // An answer on its way is usually milliseconds off; running operations are further.
      const waitMs = p.sending ? 20 : p.busyUntil - now;
      // A caller without a ticket (a script, a test) simply waits for its turn.
      const handBack =
        options.ticket !== undefined && (p.inlineWaiter || now - started + waitMs > this.maxInlineMs);
      if (!handBack) {
        const exclusive = options.ticket !== undefined;
        if (exclusive) p.inlineWaiter = true;
        try {
          await sleep(waitMs, undefined, { signal: options.signal });
        } finally {
          if (exclusive) p.inlineWaiter = false;
        }
        continue;
      }
      throw this.busy(p, ticket, waitMs, locked);
    }
  }

  /**
   * How much later the next try goes after a 423: while the last answer's operations may still
   * run, a little after the longest such operation seen would have ended; after that (or for
   * another actor's change) a probe step, doubling from the third 423 in a row. While few
   * durations are known, each 423 proves the operation longer (`outlasted`), and the longest
   * seen grows with it: the next try goes by that, not by a step sized for operations of any
   * length (60 over 3 at 3 s ± 50%: a first turn released from one quick duration met up to
   * five 423s 250 ms apart).
   */
  private afterLocked(p: State): number {
    const now = this.now();
    const slowest = p.lastOperations.length > 0 ? this.options.expected(p.lastOperations, 1) : undefined;
    // The slowest seen is seldom the slowest there is (of n seen, one in n+1 is slower): beyond
    // it by the gap between the release and it, so the retry is not sent into the same lock.
    const released = this.released(p.lastOperations);
    const byShare =
      slowest === undefined ? undefined : slowest + Math.max(0, slowest - (released ?? slowest));
    if (byShare !== undefined && p.answeredAt + byShare - now >= minProbeMs) {
      return Math.min(p.answeredAt + byShare - now, maxProbeMs);
    }
    return Math.min(this.probeMs * 2 ** Math.max(0, p.lockedInARow - 3), maxProbeMs);
  }

  /** Whether the last answer's operations are all the gate knows to run (no other actor's). */
  private onlyOwnRunning(p: State): boolean {
    const own = p.lastOperations;
    return own.length > 0 && own.length === p.running.size && own.every((op) => p.running.has(op.id));
  }

  /**
   * The last answer's operations were of unknown duration: once any project of the account has
   * learned one (durations are the account's), their end is the learned one, and the next
   * mutation probes instead of a list confirming.
   */
  private learned(p: State): void {
    const known =
      this.released(p.lastOperations) ?? this.options.borrowed?.(p.lastOperations, this.releaseShare);
    if (known === undefined) return;
    p.guessedOwn = false;
    p.guessed = false;
    p.busyUntil = p.answeredAt + known;
    p.turnMs = this.options.expected(p.lastOperations, 0.5) ?? p.turnMs;
    for (const op of p.lastOperations) if (p.running.has(op.id)) p.running.set(op.id, p.busyUntil);
  }

  /**
   * When the next mutation goes after these operations started: by when `releaseShare` of such
   * operations have ended, or the longest seen where it is hardly later (`tightSpread`).
   */
  private released(operations: readonly Operation[]): number | undefined {
    const { expected } = this.options;
    const release = expected(operations, this.releaseShare);
    const longest = expected(operations, 1);
    const usual = expected(operations, 0.5);
    if (release === undefined || longest === undefined || usual === undefined) return release;
    return longest - release < tightSpread * usual ? longest : release;
  }

  /** The operations a mutation's answer started now run; the project is busy until they end. */
  private answered(p: State, operations: readonly Operation[]): void {
    const now = this.now();
    p.answeredAt = now;
    // The platform accepted a change: nothing held its lock, so what the gate knew ran has ended.
    if (operations.length > 0 && this.options.projectWideLock?.()) p.running.clear();
    const running = operations.filter((op) => !isSettled(op));
    p.lastOperations = running;
    p.guessedOwn = false;
    if (running.length === 0) {
      p.busyUntil = now;
      return;
    }
    const known = this.released(running) ?? this.options.borrowed?.(running, this.releaseShare);
    const expected = known ?? this.unknownMs;
    // Only a blind guess is confirmed by a list; a time learned from any action is probed by the
    // next mutation (a 423 costs a request as a list does, a success costs none).
    p.guessed = known === undefined;
    p.guessedOwn = p.guessed;
    p.turnMs = this.options.expected(running, 0.5) ?? p.turnMs;
    p.busyUntil = now + expected;
    for (const op of running) p.running.set(op.id, now + expected);
  }

  /**
   * What a list of the project's operations showed (`listedAt`: when the list was asked for).
   * Running operations the gate did not know of (another actor's) hold the project until they
   * are expected to end; when every one it knew of is settled, the project is free now.
   */
  observe(operations: readonly Operation[], listedAt: number): void {
    const p = this.p;
    const now = this.now();
    const seen = new Map(operations.map((op) => [op.id, op]));
    for (const op of operations) {
      if (isSettled(op)) continue;
      // Still running, its own or another actor's: it ends when such operations usually do.
      const known = this.released([op]);
      // How long it has run: total_duration_ms at the list's time (timestamps have whole seconds).
      const started =
        op.totalDurationMs !== undefined ? listedAt - op.totalDurationMs : Date.parse(op.createdAt);
      // Of unknown length and already past the guess: look again when it has run twice as long,
      // not every probe step (each look costs a request). Doubling finds a 6 s operation in four
      // looks (1, 2, 4, 8 s) where half as long again took six, each a list while every project
      // of the account waits for what the first one learns; the last look is at most as late as
      // the operation was long.
      const elapsed = Number.isNaN(started) ? 0 : listedAt - started;
      const end = known !== undefined ? started + known : Math.max(started + this.unknownMs, now + elapsed);
      const expectedEnd = Math.max(Number.isNaN(end) ? now : end, now + this.probeMs);
      p.running.set(op.id, expectedEnd);
      if (expectedEnd > p.busyUntil) {
        p.busyUntil = expectedEnd;
        p.guessed = known === undefined;
        // Held by what the list showed: learned durations of the last answer's no longer decide.
        if (!p.lastOperations.some((own) => own.id === op.id)) p.guessedOwn = false;
      }
    }
    let anyRunning = false;
    for (const [id, end] of p.running) {
      const op = seen.get(id);
      if (op && isSettled(op)) p.running.delete(id);
      else if (op === undefined && end < now - 60_000) p.running.delete(id);
      else anyRunning = true;
    }
    // The list is eventually consistent: only one asked after the last answer can free the project.
    if (!anyRunning && !p.sending && listedAt >= p.answeredAt) {
      p.guessedOwn = false;
      if (p.busyUntil > now) p.busyUntil = now;
    }
    this.callNext(p);
  }

  private busy(p: State, ticket: string, waitMs: number, locked: LockedError | undefined): ProjectBusyError {
    const now = this.now();
    for (const [other, due] of p.waiting) {
      if (due + ticketGraceMs < now) this.leaveLine(p, other);
    }
    // Its place in the line: turns of those ahead come after the running operations end.
    let ahead = 0;
    for (const other of p.waiting.keys()) {
      if (other === ticket) break;
      ahead++;
    }
    const retryAfterMs = Math.max(waitMs, 0) + ahead * p.turnMs + 10;
    p.waiting.set(ticket, now + retryAfterMs);
    // A line: more than one change waits (one alone, handed back while its own last change runs,
    // is a single change, looked at step by step).
    if (p.waiting.size > 1) {
      p.heldAt = now;
      p.lined.add(ticket);
    }
    // The message is what a resource's status shows: it stays the same while the wait goes on, so
    // waiting costs no status writes.
    return new ProjectBusyError(
      `project ${this.projectId} has operations running; this change waits for them to end`,
      {
        projectId: this.projectId,
        route: "gate",
        status: locked?.status,
        code: locked?.code,
        requestId: locked?.requestId,
        retryAfterMs,
        cause: locked,
      },
    );
  }
}
