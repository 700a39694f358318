// Injected faults: error statuses, latency, connection resets, and responses
// lost after the change was applied (the case that breaks naive clients).
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness } from "../../test/emulator/harness.ts";

const P = "/projects/demo-project";

describe("faults", () => {
  it("an error status on one route and method, a given number of times, with the error body", async () => {
    const h = await startHarness();
    const set = await h.admin("PUT", "/faults", {
      requests: [{ method: "GET", route: "/projects/:project_id/endpoints", status: 503, times: 2 }],
    });
    expect(set.status).toBe(200);
    expect((await h.api("GET", `${P}/endpoints`)).status).toBe(503);
    expect((await h.api("GET", "/projects")).status).toBe(200);
    const second = await h.api("GET", `${P}/endpoints`);
    expect(second.status).toBe(503);
    expect(second.body).toEqual({ code: "", message: expect.any(String), request_id: expect.any(String) });
    expect((await h.api("GET", `${P}/endpoints`)).status).toBe(200);
  });

  it("a route in the request log's form (METHOD /path) is that method and path; a contradicting method is refused", async () => {
    const h = await startHarness();
    await h.api("GET", `${P}/endpoints`);
    const [logged] = (await h.admin("GET", "/requests?limit=1")).body.requests;
    expect(logged.route).toBe("GET /projects/:project_id/endpoints");
    const set = await h.admin("PUT", "/faults", { requests: [{ route: logged.route, status: 503 }] });
    expect(set.body.requests[0]).toMatchObject({ method: "GET", route: "/projects/:project_id/endpoints" });
    expect((await h.api("GET", `${P}/endpoints`)).status).toBe(503);
    expect((await h.api("POST", `${P}/endpoints`, {})).status).toBe(400);
    const contradicting = await h.admin("PUT", "/faults", {
      requests: [{ method: "POST", route: logged.route }],
    });
    expect(contradicting).toMatchObject({
      status: 400,
      body: { message: "requests.0.method: POST contradicts the route's GET" },
    });
    const unrooted = await h.admin("PUT", "/faults", { requests: [{ route: "projects/:project_id" }] });
    expect(unrooted.status).toBe(400);
    expect(unrooted.body.message).toContain("requests.0.route: a route pattern under /api/v2");
  });

  it.each([500, 423, 429])("status %s can be injected", async (status) => {
    const h = await startHarness();
    await h.admin("PUT", "/faults", { requests: [{ status }] });
    expect((await h.api("GET", "/projects")).status).toBe(status);
  });

  it("a connection reset leaves the client without an answer", async () => {
    const h = await startHarness();
    await h.admin("PUT", "/faults", { requests: [{ route: "/projects", reset: true, times: 1 }] });
    await expect(h.api("GET", "/projects")).rejects.toThrow();
    expect((await h.api("GET", "/projects")).status).toBe(200);
  });

  it("a lost response: the endpoint is created although the client never hears of it", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    await h.admin("PUT", "/faults", {
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", lose_response: true, times: 1 }],
    });
    await expect(
      h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write", name: "lost" } }),
    ).rejects.toThrow();
    const endpoints = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    expect(endpoints.filter((e: { name?: string }) => e.name === "lost")).toHaveLength(1);
    // A naive retry now collides with what the lost request created.
    const retry = await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write" } });
    expect([409, 423]).toContain(retry.status);
  });

  it("added latency is applied and shows in the request log", async () => {
    const h = await startHarness();
    await h.admin("PUT", "/faults", { requests: [{ route: "/projects", latency_ms: 20 }] });
    expect((await h.api("GET", "/projects")).status).toBe(200);
    const [entry] = (await h.admin("GET", "/requests?limit=1")).body.requests;
    expect(entry).toMatchObject({ route: "GET /projects", status: 200, fault: "latency" });
  });

  it("a fault rate below 1 injects on some requests only", async () => {
    let roll = 0;
    const h = await startHarness({ random: () => [0.1, 0.9][roll++ % 2]! });
    await h.admin("PUT", "/faults", { requests: [{ status: 500, rate: 0.5 }] });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await h.api("GET", "/projects")).status);
    expect(statuses).toEqual([500, 200, 500, 200]);
  });

  it("invalid fault settings are refused and the current ones kept; DELETE clears them", async () => {
    const h = await startHarness();
    await h.admin("PUT", "/faults", { requests: [{ status: 503 }] });
    expect((await h.admin("PUT", "/faults", { requests: [{ status: 404 }] })).status).toBe(400);
    expect((await h.admin("GET", "/faults")).body.requests).toHaveLength(1);
    await h.admin("DELETE", "/faults");
    expect((await h.api("GET", "/projects")).status).toBe(200);
  });
});
