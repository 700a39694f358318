import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { registerOperatorMetrics } from "./metrics.ts";

describe("the operator's own metrics", () => {
  it("counts platform requests by route and status, 423s apart, and budget waits", async () => {
    const registry = new Registry();
    const hooks = registerOperatorMetrics({ registry, version: "1.2.3", controllers: () => [] });
    const route = "/projects/{project_id}/endpoints/{endpoint_id}";
    hooks.request({ route, method: "PATCH", status: 200, durationMs: 120 });
    hooks.request({ route, method: "PATCH", status: 423, durationMs: 5 });
    hooks.budgetWait(250, route);
    const text = await registry.metrics();
    expect(text).toContain(
      `neon_cloud_operator_platform_requests_total{route="${route}",method="PATCH",status="423"} 1`,
    );
    expect(text).toContain(`neon_cloud_operator_platform_locked_total{route="${route}",method="PATCH"} 1`);
    expect(text).toContain(`neon_cloud_operator_platform_budget_wait_seconds_sum{route="${route}"} 0.25`);
    expect(text).toContain(
      `neon_cloud_operator_build_info{version="1.2.3",node_version="${process.version}"} 1`,
    );
  });
});
