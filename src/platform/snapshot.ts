/**
 * A project's list of platform objects (its endpoints, its branches), shared by every reader of
 * the project. Thousands of resources in one project would each list the project on every
 * reconcile; instead, readers share one list request (single-flight) and its answer for as long
 * as they accept (`maxAgeMs`), whichever of the account's keys they act with. The project's own
 * changes keep the answer current: a successful one records the object it returned (or its
 * removal), so a create storm does not re-list the project after every create, and when the
 * change's operations finish the object takes the state its answer announced; a change whose
 * outcome is unknown, or whose operations failed, forgets the list, and the next reader lists
 * again.
 */
import { keyRefused } from "./errors.ts";

/** What the snapshot needs of an object: its id and the platform's state fields. */
export interface SnapshotItem {
  id: string;
  currentState: string;
  pendingState?: string | undefined;
}

export interface SnapshotOptions {
  /** How old a list may be when a reader names no age of its own. Default 1 s. */
  windowMs?: number;
  now?: () => number;
}

/** How a reader lists the objects, with its own key. */
export type Lister<T> = () => Promise<readonly T[]>;

interface Entry<T> {
  startedAt: number;
  items: Promise<readonly T[]>;
  /** Who sent the list (a key's client): a refusal of that key is not shared with other keys. */
  sentBy: unknown;
  /** The answer once it arrived; changes are applied to it in place of a new list. */
  resolved?: T[];
}

export class ListSnapshot<T extends SnapshotItem> {
  private entry: Entry<T> | undefined;
  private readonly windowMs: number;
  private readonly now: () => number;
  /** The oldest answer a reader has accepted so far (`stale`). */
  private longestAgeMs: number;

  constructor(options: SnapshotOptions = {}) {
    this.windowMs = options.windowMs ?? 1_000;
    this.now = options.now ?? (() => performance.now());
    this.longestAgeMs = this.windowMs;
  }

  /**
   * The objects from a list no older than `maxAgeMs`, shared with other readers; `list` sends a
   * new one when needed, and `reader` says whose key it is sent with.
   */
  get(list: Lister<T>, reader: unknown, maxAgeMs: number = this.windowMs): Promise<readonly T[]> {
    const now = this.now();
    const entry = this.entry;
    this.longestAgeMs = Math.max(this.longestAgeMs, maxAgeMs);
    if (entry && now - entry.startedAt < maxAgeMs) {
      // Another key's refusal (revoked, or scoped elsewhere) is that key's: this reader lists with its own.
      return entry.sentBy === reader ? entry.items : entry.items.catch((err: unknown) => refused(err, list));
    }
    const fresh: Entry<T> = { startedAt: now, items: list(), sentBy: reader };
    this.entry = fresh;
    fresh.items.then(
      (items) => store(fresh, [...items]),
      // A failure is shared with those already waiting, but not cached for later readers.
      () => {
        if (this.entry === fresh) this.entry = undefined;
      },
    );
    return fresh.items;
  }

  /** A successful change's answer: the object as it now is (or, with `removed`, gone). */
  record(item: T, removed = false): void {
    const entry = this.entry;
    // A list still in flight may or may not include the change: let the next reader list again.
    if (!entry?.resolved) return this.invalidate();
    const others = entry.resolved.filter((e) => e.id !== item.id);
    store(entry, removed ? others : [...others, item]);
  }

  /** The object is gone (a DELETE answered 204 without a body): drop it from the answer. */
  remove(id: string): void {
    const entry = this.entry;
    if (!entry?.resolved) return this.invalidate();
    store(
      entry,
      entry.resolved.filter((e) => e.id !== id),
    );
  }

  /**
   * The operations of the project's last change of the object all finished. When the change's
   * answer announced a `pending_state` (endpoint creates and updates, branch creates do), the
   * object is now in it (the platform's own meaning of the field), so waiting for them costs no
   * new list of the project. Start and suspend answers announce none, but their operations say
   * the state they leave (`state`: start_compute, active; suspend_compute, idle). Otherwise the
   * list is forgotten and the next reader lists it.
   */
  settle(id: string, state?: string): void {
    const entry = this.entry;
    const item = entry?.resolved?.find((e) => e.id === id);
    const now = item?.pendingState ?? state;
    if (!entry?.resolved || item === undefined || now === undefined) return this.invalidate();
    const settled = { ...item, currentState: now, pendingState: undefined };
    store(
      entry,
      entry.resolved.map((e) => (e.id === id ? settled : e)),
    );
  }

  /** Forgets the list: the next reader sends a new list request. */
  invalidate(): void {
    this.entry = undefined;
  }

  /**
   * Whether it holds no answer a reader may still take: none, or one older than any reader has
   * accepted (readers of a project at rest accept a resync period, so its adoption's lists are
   * held for about that long, not for the life of the process). A list still being read is kept.
   */
  stale(): boolean {
    const entry = this.entry;
    if (!entry) return true;
    return entry.resolved !== undefined && this.now() - entry.startedAt >= this.longestAgeMs;
  }
}

/** Makes `items` the entry's answer, for readers now and later. */
function store<T>(entry: Entry<T>, items: T[]): void {
  entry.resolved = items;
  entry.items = Promise.resolve(items);
}

/** A list another key sent failed: a refusal of that key makes this reader list with its own. */
function refused<T>(err: unknown, list: Lister<T>): Promise<readonly T[]> {
  if (keyRefused(err)) return list();
  throw err;
}
