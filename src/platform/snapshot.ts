/**
 * Per-project endpoint snapshot. Thousands of ComputeEndpoint resources in one project would
 * each list the project's endpoints on every reconcile; instead, readers that arrive while a
 * list request is in flight, or within `windowMs` after it started, share its answer
 * (single-flight). A mutation invalidates the project so nobody reads a pre-mutation list.
 */
import type { Endpoint } from "./schemas.ts";

export interface EndpointSnapshotOptions {
  /** How long after a list request started its answer is still shared. Default 1 s. */
  windowMs?: number;
  now?: () => number;
}

interface Entry {
  startedAt: number;
  endpoints: Promise<readonly Endpoint[]>;
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

  /** The project's endpoints, from a list request shared with concurrent readers. */
  get(projectId: string): Promise<readonly Endpoint[]> {
    const now = this.now();
    const entry = this.entries.get(projectId);
    if (entry && now - entry.startedAt < this.windowMs) return entry.endpoints;
    const fresh: Entry = { startedAt: now, endpoints: this.list(projectId) };
    this.entries.set(projectId, fresh);
    // A failure is shared with those already waiting, but not cached for later readers.
    fresh.endpoints.catch(() => {
      if (this.entries.get(projectId) === fresh) this.entries.delete(projectId);
    });
    return fresh.endpoints;
  }

  /** Forgets the project's snapshot: the next reader sends a new list request. */
  invalidate(projectId: string): void {
    this.entries.delete(projectId);
  }
}
