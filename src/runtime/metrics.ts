// The runtime's Prometheus metrics under the names controller-runtime and
// client-go give them, so dashboards and alerts written for Go operators work
// unchanged: names, types, labels, label values and buckets as in
// controller-runtime v0.22 (pkg/internal/controller/metrics, pkg/internal/metrics,
// pkg/metrics/leaderelection.go). The runtime knows no platform: the operator
// registers its own families on the same registry.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * How a reconcile ended, in controller-runtime's `result` label values. A terminal error is
 * "error" there too, and is counted in the errors and terminal-errors families as well.
 */
export type ReconcileResult = "success" | "requeue" | "requeue_after" | "error";

/** Live figures of a work queue, read when Prometheus scrapes. */
export interface WorkQueueSample {
  /** Sum over items being processed of how long each has been processing, in seconds. */
  unfinishedWorkSeconds: number;
  /** How long the longest-running item has been processing, in seconds. */
  longestRunningProcessorSeconds: number;
}

/** The hooks one controller's queue calls (see workqueue.ts). */
export interface WorkQueueMetrics {
  depth(depth: number): void;
  added(): void;
  retried(): void;
  waited(ms: number): void;
  worked(ms: number): void;
}

// client-go's workqueue buckets: 10 ns to 1,000 s by powers of ten.
const workqueueBuckets = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);
const reconcileBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

export class Metrics {
  readonly registry: Registry;
  readonly reconcileTotal: Counter<"controller" | "result">;
  readonly reconcileErrors: Counter<"controller">;
  readonly terminalReconcileErrors: Counter<"controller">;
  readonly reconcileTime: Histogram<"controller">;
  readonly maxConcurrentReconciles: Gauge<"controller">;
  readonly activeWorkers: Gauge<"controller">;
  readonly leaderElectionStatus: Gauge<"name">;
  private readonly depth: Gauge<"name" | "controller" | "priority">;
  private readonly adds: Counter<"name" | "controller">;
  private readonly retries: Counter<"name" | "controller">;
  private readonly queueDuration: Histogram<"name" | "controller">;
  private readonly workDuration: Histogram<"name" | "controller">;
  /** Queues sampled at scrape time for the two "processing now" gauges. */
  private readonly queues = new Map<string, () => WorkQueueSample>();

  constructor(options: { registry?: Registry; defaultMetrics?: boolean } = {}) {
    const registry = options.registry ?? new Registry();
    this.registry = registry;
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
    const registers = [registry];
    const controller = ["controller"] as const;
    const queue = ["name", "controller"] as const;
    this.reconcileTotal = new Counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller",
      labelNames: ["controller", "result"] as const,
      registers,
    });
    this.reconcileErrors = new Counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller",
      labelNames: controller,
      registers,
    });
    this.terminalReconcileErrors = new Counter({
      name: "controller_runtime_terminal_reconcile_errors_total",
      help: "Total number of terminal reconciliation errors per controller",
      labelNames: controller,
      registers,
    });
    this.reconcileTime = new Histogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller",
      labelNames: controller,
      buckets: reconcileBuckets,
      registers,
    });
    this.maxConcurrentReconciles = new Gauge({
      name: "controller_runtime_max_concurrent_reconciles",
      help: "Maximum number of concurrent reconciles per controller",
      labelNames: controller,
      registers,
    });
    this.activeWorkers = new Gauge({
      name: "controller_runtime_active_workers",
      help: "Number of currently used workers per controller",
      labelNames: controller,
      registers,
    });
    this.depth = new Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue by workqueue and priority",
      labelNames: ["name", "controller", "priority"] as const,
      registers,
    });
    this.adds = new Counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      labelNames: queue,
      registers,
    });
    this.retries = new Counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      labelNames: queue,
      registers,
    });
    this.queueDuration = new Histogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested",
      labelNames: queue,
      buckets: workqueueBuckets,
      registers,
    });
    this.workDuration = new Histogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes.",
      labelNames: queue,
      buckets: workqueueBuckets,
      registers,
    });
    const queues = this.queues;
    new Gauge({
      name: "workqueue_unfinished_work_seconds",
      help:
        "How many seconds of work has been done that is in progress and hasn't been observed by " +
        "work_duration. Large values indicate stuck threads. One can deduce the number of stuck " +
        "threads by observing the rate at which this increases.",
      labelNames: queue,
      registers,
      collect() {
        for (const [name, sample] of queues)
          this.set({ name, controller: name }, sample().unfinishedWorkSeconds);
      },
    });
    new Gauge({
      name: "workqueue_longest_running_processor_seconds",
      help: "How many seconds has the longest running processor for workqueue been running.",
      labelNames: queue,
      registers,
      collect() {
        for (const [name, sample] of queues)
          this.set({ name, controller: name }, sample().longestRunningProcessorSeconds);
      },
    });
    this.leaderElectionStatus = new Gauge({
      name: "leader_election_master_status",
      help:
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, " +
        "1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: ["name"] as const,
      registers,
    });
  }

  /**
   * Declares a controller as controller-runtime does when it starts: its worker limit, and every
   * result at 0, so rates and alerts see the series before the first error.
   */
  controllerStarted(name: string, maxConcurrentReconciles: number): void {
    this.maxConcurrentReconciles.set({ controller: name }, maxConcurrentReconciles);
    this.activeWorkers.set({ controller: name }, 0);
    for (const result of ["error", "requeue_after", "requeue", "success"] as const)
      this.reconcileTotal.inc({ controller: name, result }, 0);
    this.reconcileErrors.inc({ controller: name }, 0);
    this.terminalReconcileErrors.inc({ controller: name }, 0);
  }

  /** Records one finished reconcile; a terminal error also counts as an error. */
  reconciled(name: string, result: ReconcileResult | "terminal", seconds: number): void {
    const errored = result === "error" || result === "terminal";
    this.reconcileTotal.inc({ controller: name, result: errored ? "error" : result });
    if (errored) this.reconcileErrors.inc({ controller: name });
    if (result === "terminal") this.terminalReconcileErrors.inc({ controller: name });
    this.reconcileTime.observe({ controller: name }, seconds);
  }

  /** The hooks for a controller's queue (client-go names the queue after its controller). */
  workQueue(name: string, sample: () => WorkQueueSample): WorkQueueMetrics {
    const labels = { name, controller: name };
    this.queues.set(name, sample);
    this.depth.set({ ...labels, priority: "" }, 0);
    this.adds.inc(labels, 0);
    this.retries.inc(labels, 0);
    return {
      depth: (depth) => this.depth.set({ ...labels, priority: "" }, depth),
      added: () => this.adds.inc(labels),
      retried: () => this.retries.inc(labels),
      waited: (ms) => this.queueDuration.observe(labels, ms / 1000),
      worked: (ms) => this.workDuration.observe(labels, ms / 1000),
    };
  }
}

/** A registry with the runtime's families (and Node's process metrics unless disabled). */
export function createMetrics(options: { registry?: Registry; defaultMetrics?: boolean } = {}): Metrics {
  return new Metrics(options);
}
