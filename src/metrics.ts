// The operator's own metrics, under one prefix beside the runtime's
// controller-runtime families on the same registry: the platform client's
// requests, budget waits and 423s, operations in flight, informer lists and
// build info. The runtime knows nothing of these (it knows no platform).
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { ComputeEndpointStatus } from "./api/computeendpoint.ts";
import type { PlatformMetrics } from "./platform/metrics.ts";
import type { Controller, KubeObject } from "./runtime/index.ts";

export const metricPrefix = "neon_cloud_operator_";

/** Operation statuses that still lead somewhere (the contract's others are final). */
const unsettled = new Set(["scheduling", "running", "cancelling"]);

const seconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface OperatorMetricsOptions {
  registry: Registry;
  version: string;
  /** The controllers whose caches the scrape-time gauges read. */
  controllers: () => readonly Controller<KubeObject>[];
}

/** Registers the operator's families; returns the hooks to hand the platform client. */
export function registerOperatorMetrics(options: OperatorMetricsOptions): PlatformMetrics {
  const registers = [options.registry];
  const requests = new Counter({
    name: `${metricPrefix}platform_requests_total`,
    help: "Requests to the platform API by route template, method and HTTP status (0 when no response).",
    labelNames: ["route", "method", "status"] as const,
    registers,
  });
  const requestDuration = new Histogram({
    name: `${metricPrefix}platform_request_duration_seconds`,
    help: "Duration of platform API requests.",
    labelNames: ["route", "method"] as const,
    buckets: seconds,
    registers,
  });
  const budgetWait = new Histogram({
    name: `${metricPrefix}platform_budget_wait_seconds`,
    help: "Time requests waited for the account's request budget (the client's rate limiting).",
    labelNames: ["route"] as const,
    buckets: seconds,
    registers,
  });
  const locked = new Counter({
    name: `${metricPrefix}platform_locked_total`,
    help: "Requests the platform refused with 423 Locked: a conflicting operation was still running.",
    labelNames: ["route", "method"] as const,
    registers,
  });
  const buildInfo = new Gauge({
    name: `${metricPrefix}build_info`,
    help: "Always 1; the labels say which operator version runs on which Node.js.",
    labelNames: ["version", "node_version"] as const,
    registers,
  });
  buildInfo.set({ version: options.version, node_version: process.version }, 1);
  const controllers = options.controllers;
  new Gauge({
    name: `${metricPrefix}platform_operations_in_flight`,
    help: "Platform operations not settled yet, as the ComputeEndpoints' status last recorded them, by action.",
    labelNames: ["action"] as const,
    registers,
    collect() {
      const counts = new Map<string, number>();
      for (const controller of controllers()) {
        if (controller.kind.kind !== "ComputeEndpoint") continue;
        for (const obj of controller.informer.list() as (KubeObject & { status?: ComputeEndpointStatus })[])
          for (const op of obj.status?.operations ?? [])
            if (unsettled.has(op.status)) counts.set(op.action, (counts.get(op.action) ?? 0) + 1);
      }
      this.reset();
      for (const [action, count] of counts) this.set({ action }, count);
    },
  });
  new Counter({
    name: `${metricPrefix}informer_lists_total`,
    help: "Full lists by the informers, by resource: one per watched namespace at start, then one per relist (410 Gone, an outage).",
    labelNames: ["resource"] as const,
    registers,
    collect() {
      this.reset();
      // Controllers share informers (runtime/shared-informers.ts): each is counted once.
      const caches = new Set(controllers().flatMap((controller) => controller.caches));
      for (const cache of caches)
        this.inc({ resource: `${cache.kind.plural}.${cache.kind.group || "core"}` }, cache.stats.lists);
    },
  });
  return {
    request({ route, method, status, durationMs }) {
      requests.inc({ route, method, status: String(status) });
      requestDuration.observe({ route, method }, durationMs / 1000);
      if (status === 423) locked.inc({ route, method });
    },
    budgetWait(ms, route) {
      budgetWait.observe({ route }, ms / 1000);
    },
  };
}
