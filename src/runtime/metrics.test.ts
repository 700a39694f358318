import { describe, expect, it } from "vitest";
import { createMetrics } from "./metrics.ts";

describe("metrics", () => {
  it("exposes the platform client's requests and budget waits through its hook adapter", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.platform.request({
      route: "/projects/{project_id}/endpoints",
      method: "POST",
      status: 201,
      durationMs: 120,
    });
    metrics.platform.request({
      route: "/projects/{project_id}/endpoints",
      method: "POST",
      status: 429,
      durationMs: 5,
    });
    metrics.platform.budgetWait(250, "/projects/{project_id}/endpoints");
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'neon_platform_requests_total{route="/projects/{project_id}/endpoints",method="POST",status="201"} 1',
    );
    expect(text).toContain(
      'neon_platform_requests_total{route="/projects/{project_id}/endpoints",method="POST",status="429"} 1',
    );
    expect(text).toContain(
      'neon_platform_budget_wait_seconds_sum{route="/projects/{project_id}/endpoints"} 0.25',
    );
  });
});
