// Future events of the emulated world (an operation finishing, an endpoint
// reaching its autosuspend delay), in time order. The world is advanced lazily:
// before each request every event that is due is applied at its own time, so
// results do not depend on timers firing punctually.

export type WorldEvent =
  | { at: number; kind: "operation-due"; operationId: string }
  | { at: number; kind: "autosuspend"; endpointId: string }
  | { at: number; kind: "check-availability" }
  | { at: number; kind: "branch-expiry"; branchId: string }
  | { at: number; kind: "snapshot-expiry"; snapshotId: string }
  | { at: number; kind: "project-purge"; projectId: string };

/** A binary min-heap ordered by `at`, then by insertion order. */
export class Timeline {
  private heap: { event: WorldEvent; seq: number }[] = [];
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  push(event: WorldEvent): void {
    this.heap.push({ event, seq: this.seq++ });
    let i = this.heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** Removes and returns the earliest event if it is due at `now`. */
  popDue(now: number): WorldEvent | undefined {
    const top = this.heap[0];
    if (!top || top.event.at > now) return undefined;
    const last = this.heap.pop();
    if (last && this.heap.length > 0) {
      this.heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let smallest = i;
        if (l < this.heap.length && this.less(l, smallest)) smallest = l;
        if (r < this.heap.length && this.less(r, smallest)) smallest = r;
        if (smallest === i) break;
        this.swap(i, smallest);
        i = smallest;
      }
    }
    return top.event;
  }

  clear(): void {
    this.heap = [];
  }

  private less(a: number, b: number): boolean {
    const x = this.heap[a]!;
    const y = this.heap[b]!;
    return x.event.at < y.event.at || (x.event.at === y.event.at && x.seq < y.seq);
  }

  private swap(a: number, b: number): void {
    const t = this.heap[a]!;
    this.heap[a] = this.heap[b]!;
    this.heap[b] = t;
  }
}
