// Restoring a branch from the head of another (reset from parent) and the
// project's connection URIs, through the platform API. Responses are checked
// against the OpenAPI document.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness } from "../../test/emulator/harness.ts";
import { conforming } from "../../test/emulator/openapi.ts";

const P = "/projects/demo-project";
const restore = "/projects/{project_id}/branches/{branch_id}/restore";
const uri = "/projects/{project_id}/connection_uri";

describe("restore", () => {
  it("reset from parent: the branch's roles and databases become the parent's, its computes restart", async () => {
    const h = await startHarness();
    const { main, dev } = await branchesOf(h);
    await h.api("POST", `${P}/branches/${dev}/roles`, { role: { name: "scratch" } });
    await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write" } });
    h.clock.advance(2000);
    const restored = await conforming(h, "POST", restore, `${P}/branches/${dev}/restore`, {
      source_branch_id: main,
    });
    expect(restored.status).toBe(200);
    expect(restored.body.branch).toMatchObject({
      id: dev,
      parent_id: main,
      last_reset_at: expect.any(String),
    });
    expect(restored.body.operations.map((o: { action: string }) => o.action)).toEqual([
      "suspend_compute",
      "create_timeline",
      "start_compute",
    ]);
    const names = (await h.api("GET", `${P}/branches/${dev}/roles`)).body.roles.map(
      (r: { name: string }) => r.name,
    );
    expect(names).toEqual(["neondb_owner"]);
    expect((await h.api("POST", `${P}/branches/${dev}/roles`, { role: { name: "x" } })).status).toBe(423);
  });

  it("refuses what it cannot do: a point outside the restore window, its own head, a parent with children unless preserved", async () => {
    const h = await startHarness();
    const { main, dev } = await branchesOf(h);
    const own = await conforming(h, "POST", restore, `${P}/branches/${dev}/restore`, {
      source_branch_id: dev,
    });
    expect(own.status).toBe(400);
    const pit = await h.api("POST", `${P}/branches/${dev}/restore`, {
      source_branch_id: main,
      source_timestamp: "2025-12-01T00:00:00Z",
    });
    expect(pit.status).toBe(400);
    expect(pit.body.message).toMatch(/^source_timestamp: 2025-12-01T00:00:00Z is outside the restore window/);
    expect((await h.api("POST", `${P}/branches/${dev}/restore`, {})).status).toBe(400);
    const missing = await conforming(h, "POST", restore, `${P}/branches/${dev}/restore`, {
      source_branch_id: "br-missing",
    });
    expect(missing.status).toBe(404);
    // main has children (dev, staging): its old state must be kept under a name.
    const parent = await h.api("POST", `${P}/branches/${main}/restore`, { source_branch_id: dev });
    expect(parent).toMatchObject({
      status: 400,
      body: { message: "preserve_under_name: required when the branch has child branches" },
    });
    const preserved = await h.api("POST", `${P}/branches/${main}/restore`, {
      source_branch_id: dev,
      preserve_under_name: "main-before",
    });
    expect(preserved.status).toBe(200);
    const branches = (await h.api("GET", `${P}/branches`)).body.branches as {
      id: string;
      name: string;
      parent_id?: string;
    }[];
    const kept = branches.find((b) => b.name === "main-before")!;
    expect(branches.find((b) => b.id === dev)?.parent_id).toBe(kept.id);
  });
});

describe("connection_uri", () => {
  it("without a Postgres behind it, names the endpoint's host as the platform does, direct or pooled", async () => {
    const h = await startHarness({ postgres: false });
    const { main, dev } = await branchesOf(h);
    const password = (await h.api("GET", `${P}/branches/${main}/roles/neondb_owner/reveal_password`)).body
      .password;
    const direct = await conforming(
      h,
      "GET",
      uri,
      `${P}/connection_uri?database_name=neondb&role_name=neondb_owner`,
    );
    const endpoint = (await h.api("GET", `${P}/branches/${main}/endpoints`)).body.endpoints[0];
    expect(direct.body.uri).toBe(
      `postgresql://neondb_owner:${password}@${endpoint.host}/neondb?sslmode=require`,
    );
    const pooled = await h.api(
      "GET",
      `${P}/connection_uri?database_name=neondb&role_name=neondb_owner&pooled=true`,
    );
    expect(new URL(pooled.body.uri).hostname).toBe(
      endpoint.host.replace(endpoint.id, `${endpoint.id}-pooler`),
    );
    const noEndpoint = await conforming(
      h,
      "GET",
      uri,
      `${P}/connection_uri?branch_id=${dev}&database_name=neondb&role_name=neondb_owner`,
    );
    expect(noEndpoint.status).toBe(404);
    const noRole = await h.api("GET", `${P}/connection_uri?database_name=neondb&role_name=nobody`);
    expect(noRole).toMatchObject({ status: 404, body: { message: "role nobody not found" } });
    const incomplete = await conforming(h, "GET", uri, `${P}/connection_uri?role_name=neondb_owner`);
    expect(incomplete.status).toBe(400);
    expect(incomplete.body.message).toContain("database_name");
  });
});
