// Records Kubernetes Events (events.k8s.io/v1) about our objects. A repeat of
// the same event (same object, type, reason, action and note) within the
// aggregation window does not create a new Event: it bumps the existing one's
// series count, and those bumps are coalesced to one write per interval, so a
// reconcile failing in a loop cannot flood the API server.
import { ContentType, type KubeClient, type KubeObject, type ResourceKind } from "./kube.ts";
import { silentLogger, type Logger } from "./log.ts";

export const eventKind: ResourceKind = {
  group: "events.k8s.io",
  version: "v1",
  plural: "events",
  kind: "Event",
};

export type EventType = "Normal" | "Warning";

export interface EventInput {
  type: EventType;
  /** UpperCamelCase, machine-readable (e.g. "EndpointCreated"). */
  reason: string;
  /** What the operator did or tried (e.g. "Create"). */
  action: string;
  /** Human-readable; never put secrets here. Truncated to 1 kB. */
  note: string;
}

export interface EventRecorderOptions {
  /** reportingController, e.g. "neoncloud.dev/operator". */
  controller: string;
  /** reportingInstance, e.g. the pod name. */
  instance: string;
  /** Repeats within this window aggregate into one Event. */
  aggregationWindowMs?: number;
  /** At most one write per aggregated Event per this interval. */
  minWriteIntervalMs?: number;
  log?: Logger;
}

interface Series {
  name: string;
  namespace: string;
  count: number;
  firstSeen: number;
  lastWrite: number;
  lastObserved: string;
  flush: NodeJS.Timeout | undefined;
  writing: Promise<void> | undefined;
}

function microTime(d = new Date()): string {
  return d.toISOString().replace(/Z$/, "000Z");
}

export class EventRecorder {
  private readonly client: KubeClient;
  private readonly options: EventRecorderOptions;
  private readonly log: Logger;
  private readonly series = new Map<string, Series>();
  /** Forgets the series whose window has passed (`sweepLater`). */
  private sweeper: NodeJS.Timeout | undefined;
  /** Event writes sent (creates and series bumps). */
  writes = 0;

  /** Series held in memory, their windows not yet swept. */
  get seriesHeld(): number {
    return this.series.size;
  }

  constructor(client: KubeClient, options: EventRecorderOptions) {
    this.client = client;
    this.options = options;
    this.log = options.log ?? silentLogger;
  }

  /** Records an event about `regarding`. Never throws: failures to record are logged. */
  record(regarding: KubeObject, input: EventInput): void {
    const meta = regarding.metadata;
    const namespace = meta.namespace ?? "default";
    const note = input.note.length > 1024 ? `${input.note.slice(0, 1021)}...` : input.note;
    const key = [meta.uid ?? `${namespace}/${meta.name}`, input.type, input.reason, input.action, note].join(
      "\u0000",
    );
    const now = Date.now();
    const window = this.options.aggregationWindowMs ?? 600_000;
    const existing = this.series.get(key);
    if (existing && now - existing.firstSeen < window) {
      existing.count++;
      existing.lastObserved = microTime();
      this.scheduleFlush(existing);
      return;
    }
    if (existing?.flush) clearTimeout(existing.flush);
    const name = `${meta.name ?? "object"}.${now.toString(16)}${Math.random().toString(16).slice(2, 6)}`;
    const s: Series = {
      name,
      namespace,
      count: 1,
      firstSeen: now,
      lastWrite: now,
      lastObserved: microTime(),
      flush: undefined,
      writing: undefined,
    };
    this.series.set(key, s);
    this.prune(now, window);
    this.sweepLater(window);
    const event = {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name, namespace },
      eventTime: microTime(),
      reportingController: this.options.controller,
      reportingInstance: this.options.instance,
      action: input.action,
      reason: input.reason,
      note,
      type: input.type,
      regarding: {
        apiVersion: regarding.apiVersion,
        kind: regarding.kind,
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
      },
    };
    this.writes++;
    s.writing = this.client.create(eventKind, event as KubeObject).then(
      () => undefined,
      (err: unknown) => this.log.warn({ err, reason: input.reason }, "could not record event"),
    );
  }

  private scheduleFlush(s: Series): void {
    if (s.flush) return;
    const interval = this.options.minWriteIntervalMs ?? 30_000;
    const wait = Math.max(0, s.lastWrite + interval - Date.now());
    s.flush = setTimeout(() => this.writeSeries(s), wait);
    s.flush.unref();
  }

  private writeSeries(s: Series): void {
    clearTimeout(s.flush);
    s.flush = undefined;
    s.lastWrite = Date.now();
    const patch = { series: { count: s.count, lastObservedTime: s.lastObserved } };
    this.writes++;
    // Chained after the create, so a bump never races ahead of the Event it updates.
    s.writing = (s.writing ?? Promise.resolve())
      .then(() => this.client.patch(eventKind, s.namespace, s.name, patch, ContentType.MergePatch))
      .then(
        () => undefined,
        (err: unknown) => this.log.warn({ err }, "could not update event series"),
      );
  }

  private prune(now: number, window: number, fromSize = 1000): void {
    if (this.series.size < fromSize) return;
    for (const [key, s] of this.series) if (now - s.firstSeen >= window && !s.flush) this.series.delete(key);
  }

  /**
   * A series past its window only stops a repeat from making a new Event, which it no longer
   * does: one sweep per window forgets them, so an operator at rest holds none (an adoption of
   * thousands of resources left one a resource, about 0.5 KB each, until the next event came).
   */
  private sweepLater(window: number): void {
    if (this.sweeper) return;
    this.sweeper = setTimeout(() => {
      this.sweeper = undefined;
      this.prune(Date.now(), window, 0);
      if (this.series.size > 0) this.sweepLater(window);
    }, window);
    this.sweeper.unref();
  }

  /** Sends pending series updates now (for shutdown and tests). */
  async flush(): Promise<void> {
    for (const s of this.series.values()) if (s.flush) this.writeSeries(s);
    await Promise.all([...this.series.values()].map((s) => s.writing ?? Promise.resolve()));
  }
}
