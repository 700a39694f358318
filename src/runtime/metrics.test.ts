import { describe, expect, it } from "vitest";
import { createMetrics } from "./metrics.ts";
import { WorkQueue } from "./workqueue.ts";

describe("runtime metrics (controller-runtime's families)", () => {
  it("counts a terminal failure as an error and a terminal error, as controller-runtime does", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.controllerStarted("computeendpoint", 4);
    metrics.reconciled("computeendpoint", "success", 0.2);
    metrics.reconciled("computeendpoint", "requeue_after", 0.1);
    metrics.reconciled("computeendpoint", "terminal", 0.05);
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'controller_runtime_reconcile_total{controller="computeendpoint",result="success"} 1',
    );
    expect(text).toContain(
      'controller_runtime_reconcile_total{controller="computeendpoint",result="requeue_after"} 1',
    );
    expect(text).toContain(
      'controller_runtime_reconcile_total{controller="computeendpoint",result="error"} 1',
    );
    // Declared at start, so alerts on rate() see the series before the first one happens.
    expect(text).toContain(
      'controller_runtime_reconcile_total{controller="computeendpoint",result="requeue"} 0',
    );
    expect(text).toContain('controller_runtime_reconcile_errors_total{controller="computeendpoint"} 1');
    expect(text).toContain(
      'controller_runtime_terminal_reconcile_errors_total{controller="computeendpoint"} 1',
    );
    expect(text).toContain('controller_runtime_max_concurrent_reconciles{controller="computeendpoint"} 4');
    expect(text).toContain('controller_runtime_reconcile_time_seconds_count{controller="computeendpoint"} 3');
  });

  it("reports a queue's adds, retries, waits and the work still running, as client-go does", async () => {
    let now = 1_000_000;
    const metrics = createMetrics({ defaultMetrics: false });
    const queue: WorkQueue = new WorkQueue({
      now: () => now,
      hooks: metrics.workQueue("apikey", () => queue.unfinishedWork()),
    });
    queue.add("ns/a");
    queue.add("ns/b");
    queue.add("ns/a"); // already queued: not another add
    now += 2_000;
    expect(await queue.get()).toBe("ns/a");
    now += 3_000;
    const running = await metrics.registry.metrics();
    expect(running).toContain('workqueue_adds_total{name="apikey",controller="apikey"} 2');
    expect(running).toContain('workqueue_depth{name="apikey",controller="apikey",priority=""} 1');
    expect(running).toContain('workqueue_unfinished_work_seconds{name="apikey",controller="apikey"} 3');
    expect(running).toContain(
      'workqueue_longest_running_processor_seconds{name="apikey",controller="apikey"} 3',
    );
    expect(running).toContain('workqueue_queue_duration_seconds_sum{name="apikey",controller="apikey"} 2');
    queue.addRateLimited("ns/a");
    queue.done("ns/a");
    queue.shutDown();
    const after = await metrics.registry.metrics();
    expect(after).toContain('workqueue_retries_total{name="apikey",controller="apikey"} 1');
    expect(after).toContain('workqueue_work_duration_seconds_sum{name="apikey",controller="apikey"} 3');
    expect(after).toContain('workqueue_unfinished_work_seconds{name="apikey",controller="apikey"} 0');
  });
});
