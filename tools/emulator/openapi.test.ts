// Fidelity: every response of every route the emulator serves, successes and
// errors, validates against the platform's official OpenAPI document.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness } from "../../test/emulator/harness.ts";
import { conforming, responseErrors } from "../../test/emulator/openapi.ts";

describe("responses conform to the official OpenAPI document", () => {
  it("for every route, in success and in error", async () => {
    const h = await startHarness({ checkAvailabilityIntervalMs: 60_000 });
    const { dev, staging } = await branchesOf(h);
    const P = "/projects/demo-project";
    const E = "/projects/{project_id}/endpoints";
    const one = `${E}/{endpoint_id}`;

    await conforming(h, "GET", "/auth", "/auth");
    await conforming(h, "GET", "/users/me", "/users/me");
    await conforming(h, "GET", "/users/me/organizations", "/users/me/organizations");
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

    const B = "/projects/{project_id}/branches";
    h.clock.advance(5000); // the endpoint's deletion done
    const branch = await conforming(h, "POST", B, `${P}/branches`, { branch: { name: "validated" } });
    await conforming(h, "POST", B, `${P}/branches`, { branch: { name: "validated" } }); // 409
    await conforming(h, "GET", B, `${P}/branches`);
    const path = `${P}/branches/${branch.body.branch.id}`;
    await conforming(h, "GET", `${B}/{branch_id}`, path);
    await conforming(h, "PATCH", `${B}/{branch_id}`, path, { branch: { protected: true } });
    await conforming(h, "GET", `${B}/{branch_id}`, `${P}/branches/br-missing`); // 404
    h.clock.advance(1000);
    await conforming(h, "DELETE", `${B}/{branch_id}`, path); // 422: protected
    await conforming(h, "PATCH", `${B}/{branch_id}`, path, { branch: { protected: false } });
    await conforming(h, "DELETE", `${B}/{branch_id}`, path);
    await conforming(h, "DELETE", `${B}/{branch_id}`, path); // 204

    const unauthorized = await h.api("GET", "/projects", undefined, { key: null });
    expect(responseErrors("GET", "/projects", 401, unauthorized.body)).toEqual([]);
  });

  it("for the roles, databases, restore and connection URI routes, in success and in error", async () => {
    const h = await startHarness();
    const { main, dev } = await branchesOf(h);
    const P = "/projects/demo-project";
    const B = "/projects/{project_id}/branches/{branch_id}";
    const dv = `${P}/branches/${dev}`;
    const calls: [string, string, string, unknown?][] = [
      ["GET", `${B}/roles`, `${dv}/roles`],
      ["GET", `${B}/roles`, `${P}/branches/br-missing/roles`],
      ["POST", `${B}/roles`, `${dv}/roles`, { role: { name: "checked" } }],
      ["POST", `${B}/roles`, `${dv}/roles`, { role: {} }],
      ["GET", `${B}/roles/{role_name}`, `${dv}/roles/checked`],
      ["GET", `${B}/roles/{role_name}/reveal_password`, `${dv}/roles/checked/reveal_password`],
      ["GET", `${B}/roles/{role_name}/reveal_password`, `${dv}/roles/nobody/reveal_password`],
      ["POST", `${B}/roles/{role_name}/reset_password`, `${dv}/roles/checked/reset_password`],
      ["POST", `${B}/roles/{role_name}/reset_password`, `${dv}/roles/nobody/reset_password`],
      ["GET", `${B}/databases`, `${dv}/databases`],
      ["POST", `${B}/databases`, `${dv}/databases`, { database: { name: "checked", owner_name: "checked" } }],
      ["POST", `${B}/databases`, `${dv}/databases`, { database: { name: "checked", owner_name: "checked" } }],
      ["GET", `${B}/databases/{database_name}`, `${dv}/databases/checked`],
      [
        "PATCH",
        `${B}/databases/{database_name}`,
        `${dv}/databases/checked`,
        { database: { name: "renamed" } },
      ],
      ["PATCH", `${B}/databases/{database_name}`, `${dv}/databases/checked`, { database: { name: "again" } }],
      ["DELETE", `${B}/databases/{database_name}`, `${dv}/databases/renamed`],
      ["DELETE", `${B}/databases/{database_name}`, `${dv}/databases/renamed`],
      ["DELETE", `${B}/roles/{role_name}`, `${dv}/roles/checked`],
      ["DELETE", `${B}/roles/{role_name}`, `${dv}/roles/checked`],
      ["POST", `${B}/restore`, `${dv}/restore`, { source_branch_id: main }],
      ["POST", `${B}/restore`, `${dv}/restore`, { source_branch_id: "br-missing" }],
      [
        "GET",
        "/projects/{project_id}/connection_uri",
        `${P}/connection_uri?database_name=neondb&role_name=neondb_owner`,
      ],
      ["GET", "/projects/{project_id}/connection_uri", `${P}/connection_uri?database_name=neondb`],
    ];
    const statuses: number[] = [];
    for (const [method, template, path, body] of calls) {
      statuses.push((await conforming(h, method, template, path, body)).status);
    }
    expect(statuses).toEqual([
      200, 404, 201, 400, 200, 200, 404, 200, 404, 200, 201, 409, 200, 200, 404, 200, 204, 200, 204, 200, 404,
      200, 400,
    ]);
  });

  it("for the project routes and regions, in success and in error", async () => {
    const h = await startHarness({ seed: { limits: { plan: "free" }, projects: [] } });
    const L = "/projects";
    const one = "/projects/{project_id}";
    const calls: [string, string, string, unknown?][] = [
      ["POST", L, L, { project: { name: "validated", branch: { annotations: { a: "b" } } } }],
      ["POST", L, L, { project: { pg_version: 12 } }],
      ["POST", L, L, { project: { history_retention_seconds: 86_400 } }],
      ["GET", L, `${L}?limit=1`],
      ["GET", L, `${L}?limit=500`],
      ["GET", "/regions", "/regions"],
    ];
    const statuses: number[] = [];
    for (const [method, template, path, body] of calls) {
      statuses.push((await conforming(h, method, template, path, body)).status);
    }
    expect(statuses).toEqual([201, 400, 400, 200, 400, 200]);
    const [project] = (await h.api("GET", L)).body.projects;
    const P = `${L}/${project.id}`;
    await conforming(h, "PATCH", one, P, { project: { name: "busy" } }); // 423
    h.clock.advance(5000);
    const later: [string, string, string, unknown?][] = [
      ["GET", one, P],
      ["GET", one, `${L}/no-such-project`],
      [
        "PATCH",
        one,
        P,
        { project: { settings: { enable_logical_replication: true }, history_retention_seconds: 3600 } },
      ],
      ["PATCH", one, P, { project: { region_id: "aws-us-east-1" } }],
      ["GET", "/projects/{project_id}/branches", `${P}/branches`],
    ];
    for (const [method, template, path, body] of later) {
      statuses.push((await conforming(h, method, template, path, body)).status);
    }
    h.clock.advance(5000);
    statuses.push((await conforming(h, "DELETE", one, P)).status);
    statuses.push((await conforming(h, "GET", L, `${L}?recoverable=true`)).status);
    statuses.push((await conforming(h, "POST", `${one}/recover`, `${P}/recover`)).status);
    statuses.push((await conforming(h, "POST", `${one}/recover`, `${P}/recover`)).status);
    statuses.push((await conforming(h, "DELETE", one, `${L}/no-such-project`)).status);
    expect(statuses.slice(6)).toEqual([200, 404, 200, 400, 200, 200, 200, 200, 404, 404]);
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
