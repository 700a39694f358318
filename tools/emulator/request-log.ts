// What the emulator served: the latest requests (a bounded ring) and counters
// by route and status. Holds no header or body, so no key value can leak.

export interface RequestLogEntry {
  time: string;
  method: string;
  path: string;
  /** The route pattern, e.g. `GET /projects/:project_id/endpoints`; `unknown` when none matched. */
  route: string;
  /** The status sent; 0 when the connection was dropped without an answer. */
  status: number;
  request_id: string;
  duration_ms: number;
  /** The injected fault, if any: `status`, `latency`, `reset`, `lose_response`. */
  fault?: string;
}

export class RequestLog {
  private readonly entries: RequestLogEntry[] = [];
  private next = 0;
  private readonly capacity: number;
  private readonly counts = new Map<string, Map<number, number>>();
  rateLimited = 0;
  total = 0;

  constructor(capacity = 1000) {
    this.capacity = capacity;
  }

  add(entry: RequestLogEntry): void {
    this.total++;
    if (entry.status === 429 && entry.fault === undefined) this.rateLimited++;
    let byStatus = this.counts.get(entry.route);
    if (!byStatus) {
      byStatus = new Map();
      this.counts.set(entry.route, byStatus);
    }
    byStatus.set(entry.status, (byStatus.get(entry.status) ?? 0) + 1);
    if (this.capacity === 0) return;
    this.entries[this.next] = entry;
    this.next = (this.next + 1) % this.capacity;
  }

  /** The latest entries, oldest first. */
  latest(limit = this.capacity): RequestLogEntry[] {
    const ordered = [...this.entries.slice(this.next), ...this.entries.slice(0, this.next)];
    return ordered.slice(Math.max(0, ordered.length - limit));
  }

  counters(): { total: number; rate_limited: number; by_route: Record<string, Record<string, number>> } {
    const byRoute: Record<string, Record<string, number>> = {};
    for (const [route, byStatus] of this.counts) byRoute[route] = Object.fromEntries(byStatus);
    return { total: this.total, rate_limited: this.rateLimited, by_route: byRoute };
  }

  clear(): void {
    this.entries.length = 0;
    this.next = 0;
    this.counts.clear();
    this.rateLimited = 0;
    this.total = 0;
  }
}
