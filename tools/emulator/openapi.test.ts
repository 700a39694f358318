// Fidelity: every response of every route the emulator serves, successes and
// errors, validates against the platform's official OpenAPI document.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";
import { responseErrors } from "../../test/emulator/openapi.ts";

/** Calls a route and checks its response against the document's schema for that route and status. */
async function conforming(h: Harness, method: string, template: string, path: string, body?: unknown) {
  const res = await h.api(method, path, body);
  expect(responseErrors(method, template, res.status, res.body), `${method} ${path} → ${res.status}`).toEqual(
    [],
  );
  return res;
}

describe("responses conform to the official OpenAPI document", () => {
  it("for every route, in success and in error", async () => {
    const h = await startHarness({ checkAvailabilityIntervalMs: 60_000 });
    const { dev, staging } = await branchesOf(h);
    const P = "/projects/demo-project";
    const E = "/projects/{project_id}/endpoints";
    const one = `${E}/{endpoint_id}`;

    await conforming(h, "GET", "/projects", "/projects");
    await conforming(h, "GET", "/projects", "/projects?limit=1&search=nothing-matches");
    await conforming(h, "GET", "/projects", "/projects?limit=0");
    const key = await conforming(h, "POST", "/api_keys", "/api_keys", { key_name: "validated" });
    await conforming(h, "POST", "/api_keys", "/api_keys", { key_name: 1 });
    await conforming(h, "GET", "/api_keys", "/api_keys");
    await conforming(h, "DELETE", "/api_keys/{key_id}", `/api_keys/${key.body.id}`);
    await conforming(h, "DELETE", "/api_keys/{key_id}", `/api_keys/${key.body.id}`);

    const created = await conforming(h, "POST", E, `${P}/endpoints`, {
      endpoint: {
        branch_id: dev,
        type: "read_write",
        autoscaling_limit_min_cu: 0.25,
        autoscaling_limit_max_cu: 2,
        suspend_timeout_seconds: 600,
        settings: { pg_settings: { work_mem: "64MB" } },
        pooler_enabled: true,
        name: "validated",
      },
    });
    const id = created.body.endpoint.id;
    await conforming(h, "POST", E, `${P}/endpoints`, {
      endpoint: { branch_id: staging, type: "read_write" },
    }); // 423
    await conforming(h, "POST", E, `${P}/endpoints`, { endpoint: { type: "read_write" } }); // 400
    h.clock.advance(1000);
    await conforming(h, "POST", E, `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write" } }); // 409
    await conforming(h, "GET", E, `${P}/endpoints`);
    await conforming(h, "GET", E, "/projects/no-such-project/endpoints");
    await conforming(h, "GET", one, `${P}/endpoints/${id}`);
    await conforming(h, "GET", one, `${P}/endpoints/ep-missing`);
    await conforming(h, "PATCH", one, `${P}/endpoints/${id}`, { endpoint: { autoscaling_limit_max_cu: 4 } });
    h.clock.advance(5000);
    await conforming(h, "POST", `${one}/suspend`, `${P}/endpoints/${id}/suspend`);
    h.clock.advance(1000);
    await conforming(h, "POST", `${one}/start`, `${P}/endpoints/${id}/start`);
    h.clock.advance(1000);
    await conforming(h, "POST", `${one}/restart`, `${P}/endpoints/${id}/restart`);
    h.clock.advance(2000);
    await conforming(
      h,
      "GET",
      "/projects/{project_id}/branches/{branch_id}/endpoints",
      `${P}/branches/${dev}/endpoints`,
    );
    await conforming(h, "PATCH", one, `${P}/endpoints/${id}`, { endpoint: { branch_id: staging } });
    h.clock.advance(120_000); // check_availability runs meanwhile
    const ops = await conforming(h, "GET", "/projects/{project_id}/operations", `${P}/operations?limit=50`);
    expect(ops.body.operations.map((o: { action: string }) => o.action)).toContain("check_availability");
    await conforming(h, "GET", "/projects/{project_id}/operations", `${P}/operations?limit=5000`);
    await conforming(
      h,
      "GET",
      "/projects/{project_id}/operations/{operation_id}",
      `${P}/operations/${ops.body.operations[0].id}`,
    );
    await conforming(h, "DELETE", one, `${P}/endpoints/${id}`);
    expect((await conforming(h, "DELETE", one, `${P}/endpoints/${id}`)).status).toBe(204); // already gone

    const unauthorized = await h.api("GET", "/projects", undefined, { key: null });
    expect(responseErrors("GET", "/projects", 401, unauthorized.body)).toEqual([]);
  });

  it("for a failed operation", async () => {
    const h = await startHarness();
    await h.admin("PUT", "/faults", { operations: [{}] });
    const [seeded] = (await h.api("GET", "/projects/demo-project/endpoints")).body.endpoints;
    const started = await h.api("POST", `/projects/demo-project/endpoints/${seeded.id}/start`);
    h.clock.advance(1000);
    const path = `/projects/demo-project/operations/${started.body.operations[0].id}`;
    const res = await conforming(h, "GET", "/projects/{project_id}/operations/{operation_id}", path);
    expect(res.body.operation.status).toBe("failed");
  });
});
