/**
 * Per-project snapshot of a list of platform objects (endpoints, branches). Thousands of
 * resources in one project would each list the project's endpoints or branches on every
 * reconcile; instead, readers share one list request (single-flight) and its answer for as long
 * as they accept (`maxAgeMs`). The client's own mutations keep the answer current: a successful
 * one records the object it returned (or its removal), so a create storm does not re-list the
 * project after every create, and when the change's operations finish the object takes the state
 * its answer announced; a mutation whose outcome is unknown, or whose operations failed, forgets
 * the project, and the next reader lists again.
 */
import type { Branch } from "./branch-schemas.ts";
import type { Endpoint } from "./schemas.ts";

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

interface Entry<T> {
  startedAt: number;
  items: Promise<readonly T[]>;
  /** The answer once it arrived; mutations are applied to it in place of a new list. */
  resolved?: T[];
}

export class ProjectSnapshot<T extends SnapshotItem> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly list: (projectId: string) => Promise<readonly T[]>;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(list: (projectId: string) => Promise<readonly T[]>, options: SnapshotOptions = {}) {
    this.list = list;
    this.windowMs = options.windowMs ?? 1_000;
    this.now = options.now ?? (() => performance.now());
  }

  /** The project's objects from a list no older than `maxAgeMs`, shared with other readers. */
  get(projectId: string, maxAgeMs: number = this.windowMs): Promise<readonly T[]> {
    const now = this.now();
    const entry = this.entries.get(projectId);
    if (entry && now - entry.startedAt < maxAgeMs) return entry.items;
    const fresh: Entry<T> = { startedAt: now, items: this.list(projectId) };
    this.entries.set(projectId, fresh);
    fresh.items.then(
      (items) => store(fresh, [...items]),
      // A failure is shared with those already waiting, but not cached for later readers.
      () => {
        if (this.entries.get(projectId) === fresh) this.entries.delete(projectId);
      },
    );
    return fresh.items;
  }

  /** A successful mutation's answer: the object as it now is (or, with `removed`, gone). */
  record(projectId: string, item: T, removed = false): void {
    const entry = this.entries.get(projectId);
    // A list still in flight may or may not include the change: let the next reader list again.
    if (!entry?.resolved) return this.invalidate(projectId);
    const others = entry.resolved.filter((e) => e.id !== item.id);
    store(entry, removed ? others : [...others, item]);
  }

  /** The object is gone (a DELETE answered 204 without a body): drop it from the answer. */
  remove(projectId: string, id: string): void {
    const entry = this.entries.get(projectId);
    if (!entry?.resolved) return this.invalidate(projectId);
    store(
      entry,
      entry.resolved.filter((e) => e.id !== id),
    );
  }

  /**
   * The operations of this client's last change of the object all finished. When the change's
   * answer announced a `pending_state` (endpoint creates and updates, branch creates do), the
   * object is now in it (the platform's own meaning of the field), so waiting for them costs no
   * new list of the project. Otherwise (start, suspend and restart answers, and lists, carry
   * none) the project is forgotten and the next reader lists it.
   */
  settle(projectId: string, id: string): void {
    const entry = this.entries.get(projectId);
    const item = entry?.resolved?.find((e) => e.id === id);
    if (!entry?.resolved || item?.pendingState === undefined) return this.invalidate(projectId);
    const settled = { ...item, currentState: item.pendingState, pendingState: undefined };
    store(
      entry,
      entry.resolved.map((e) => (e.id === id ? settled : e)),
    );
  }

  /** Forgets the project's snapshot: the next reader sends a new list request. */
  invalidate(projectId: string): void {
    this.entries.delete(projectId);
  }
}

/** A project's compute endpoints. */
export class EndpointSnapshot extends ProjectSnapshot<Endpoint> {}

/** A project's branches. */
export class BranchSnapshot extends ProjectSnapshot<Branch> {}

/** Makes `items` the entry's answer, for readers now and later. */
function store<T>(entry: Entry<T>, items: T[]): void {
  entry.resolved = items;
  entry.items = Promise.resolve(items);
}
