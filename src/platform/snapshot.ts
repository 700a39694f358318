/**
 * Per-project endpoint snapshot. Thousands of ComputeEndpoint resources in one project would
 * each list the project's endpoints on every reconcile; instead, readers share one list request
 * (single-flight) and its answer for as long as they accept (`maxAgeMs`). The client's own
 * mutations keep the answer current: a successful one records the endpoint it returned (or its
 * removal), so a create storm does not re-list the project after every create, and when the
 * change's operations finish the endpoint takes the state its answer announced; a mutation whose
 * outcome is unknown, or whose operations failed, forgets the project, and the next reader lists
 * again.
 */
import type { Endpoint } from "./schemas.ts";

export interface EndpointSnapshotOptions {
  /** How old a list may be when a reader names no age of its own. Default 1 s. */
  windowMs?: number;
  now?: () => number;
}

interface Entry {
  startedAt: number;
  endpoints: Promise<readonly Endpoint[]>;
  /** The answer once it arrived; mutations are applied to it in place of a new list. */
  resolved?: Endpoint[];
}

export class EndpointSnapshot {
  private readonly entries = new Map<string, Entry>();
  private readonly list: (projectId: string) => Promise<readonly Endpoint[]>;
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(
    list: (projectId: string) => Promise<readonly Endpoint[]>,
    options: EndpointSnapshotOptions = {},
  ) {
    this.list = list;
    this.windowMs = options.windowMs ?? 1_000;
    this.now = options.now ?? (() => performance.now());
  }

  /** The project's endpoints from a list no older than `maxAgeMs`, shared with other readers. */
  get(projectId: string, maxAgeMs: number = this.windowMs): Promise<readonly Endpoint[]> {
    const now = this.now();
    const entry = this.entries.get(projectId);
    if (entry && now - entry.startedAt < maxAgeMs) return entry.endpoints;
    const fresh: Entry = { startedAt: now, endpoints: this.list(projectId) };
    this.entries.set(projectId, fresh);
    fresh.endpoints.then(
      (endpoints) => store(fresh, [...endpoints]),
      // A failure is shared with those already waiting, but not cached for later readers.
      () => {
        if (this.entries.get(projectId) === fresh) this.entries.delete(projectId);
      },
    );
    return fresh.endpoints;
  }

  /** A successful mutation's answer: the endpoint as it now is (or, with `removed`, gone). */
  record(projectId: string, endpoint: Endpoint, removed = false): void {
    const entry = this.entries.get(projectId);
    // A list still in flight may or may not include the change: let the next reader list again.
    if (!entry?.resolved) return this.invalidate(projectId);
    const others = entry.resolved.filter((e) => e.id !== endpoint.id);
    store(entry, removed ? others : [...others, endpoint]);
  }

  /** The endpoint is gone (a DELETE answered 204 without a body): drop it from the answer. */
  remove(projectId: string, endpointId: string): void {
    const entry = this.entries.get(projectId);
    if (!entry?.resolved) return this.invalidate(projectId);
    store(
      entry,
      entry.resolved.filter((e) => e.id !== endpointId),
    );
  }

  /**
   * The operations of this client's last change of the endpoint all finished. When the change's
   * answer announced a `pending_state` (creates and updates do), the endpoint is now in it (the
   * platform's own meaning of the field), so waiting for them costs no new list of the project.
   * Otherwise (start, suspend and restart answers, and lists, carry none) the project is
   * forgotten and the next reader lists it.
   */
  settle(projectId: string, endpointId: string): void {
    const entry = this.entries.get(projectId);
    const endpoint = entry?.resolved?.find((e) => e.id === endpointId);
    if (!entry?.resolved || endpoint?.pendingState === undefined) return this.invalidate(projectId);
    const settled: Endpoint = { ...endpoint, currentState: endpoint.pendingState, pendingState: undefined };
    store(
      entry,
      entry.resolved.map((e) => (e.id === endpointId ? settled : e)),
    );
  }

  /** Forgets the project's snapshot: the next reader sends a new list request. */
  invalidate(projectId: string): void {
    this.entries.delete(projectId);
  }
}

/** Makes `endpoints` the entry's answer, for readers now and later. */
function store(entry: Entry, endpoints: Endpoint[]): void {
  entry.resolved = endpoints;
  entry.endpoints = Promise.resolve(endpoints);
}
