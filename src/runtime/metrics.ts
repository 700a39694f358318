// The operator's Prometheus metrics, in one registry served on /metrics.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export type ReconcileResult = "success" | "requeue" | "error" | "terminal";

/** The hooks the platform client calls for each HTTP request and each wait for its request budget. */
export interface PlatformClientMetrics {
  request(sample: { route: string; method: string; status: number; durationMs: number }): void;
  budgetWait(ms: number, route: string): void;
}

export interface Metrics {
  registry: Registry;
  reconciles: Counter<"kind" | "result">;
  reconcileDuration: Histogram<"kind">;
  queueDepth: Gauge<"kind">;
  queueWait: Histogram<"kind">;
  platformRequests: Counter<"route" | "method" | "status">;
  platformRequestDuration: Histogram<"route" | "method">;
  platformBudgetWait: Histogram<"route">;
  leader: Gauge;
  /** Adapter to hand the platform client. */
  platform: PlatformClientMetrics;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const seconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
  const platformRequests = new Counter({
    name: "neon_platform_requests_total",
    help: "Requests to the platform API by route template, method and HTTP status (0 when no response).",
    labelNames: ["route", "method", "status"] as const,
    registers,
  });
  const platformRequestDuration = new Histogram({
    name: "neon_platform_request_duration_seconds",
    help: "Duration of platform API requests.",
    labelNames: ["route", "method"] as const,
    buckets: seconds,
    registers,
  });
  const platformBudgetWait = new Histogram({
    name: "neon_platform_budget_wait_seconds",
    help: "Time requests waited for the platform client's request budget (rate limiting).",
    labelNames: ["route"] as const,
    buckets: seconds,
    registers,
  });
  return {
    registry,
    reconciles: new Counter({
      name: "neon_operator_reconciles_total",
      help: "Reconciles by kind and result (success, requeue, error, terminal).",
      labelNames: ["kind", "result"] as const,
      registers,
    }),
    reconcileDuration: new Histogram({
      name: "neon_operator_reconcile_duration_seconds",
      help: "Duration of reconciles by kind.",
      labelNames: ["kind"] as const,
      buckets: seconds,
      registers,
    }),
    queueDepth: new Gauge({
      name: "neon_operator_workqueue_depth",
      help: "Object keys waiting for a worker, by kind.",
      labelNames: ["kind"] as const,
      registers,
    }),
    queueWait: new Histogram({
      name: "neon_operator_workqueue_wait_seconds",
      help: "Time an object key waited in the queue before a worker took it.",
      labelNames: ["kind"] as const,
      buckets: seconds,
      registers,
    }),
    leader: new Gauge({
      name: "neon_operator_leader",
      help: "1 while this replica holds the leader lease.",
      registers,
    }),
    platformRequests,
    platformRequestDuration,
    platformBudgetWait,
    platform: {
      request({ route, method, status, durationMs }) {
        platformRequests.inc({ route, method, status: String(status) });
        platformRequestDuration.observe({ route, method }, durationMs / 1000);
      },
      budgetWait(ms, route) {
        platformBudgetWait.observe({ route }, ms / 1000);
      },
    },
  };
}
