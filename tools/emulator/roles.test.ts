// Roles and databases of a branch through the platform API: the default owner
// role and database of a project, copied to child branches; creating, reading
// and deleting them with apply_config under the project's lock; passwords
// revealed (412 when the project keeps none) and reset. Every response is
// checked against the OpenAPI document.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";
import { conforming } from "../../test/emulator/openapi.ts";

const P = "/projects/demo-project";
const roles = "/projects/{project_id}/branches/{branch_id}/roles";
const role = `${roles}/{role_name}`;
const databases = "/projects/{project_id}/branches/{branch_id}/databases";
const database = `${databases}/{database_name}`;

/** The main branch's id and its seeded read-write endpoint's. */
async function mainBranch(h: Harness): Promise<{ main: string; endpoint: string }> {
  const { main } = await branchesOf(h);
  const endpoints = (await h.api("GET", `${P}/branches/${main}/endpoints`)).body.endpoints;
  return { main: main!, endpoint: endpoints[0].id };
}

describe("roles and databases", () => {
  it("a project's default branch has the owner role and database; a child copies them, password included", async () => {
    const h = await startHarness();
    const { main, dev } = await branchesOf(h);
    const listed = await conforming(h, "GET", roles, `${P}/branches/${main}/roles`);
    expect(listed.body.roles).toEqual([
      expect.objectContaining({ name: "neondb_owner", branch_id: main, protected: false }),
    ]);
    expect(listed.body.roles[0]).not.toHaveProperty("password");
    const dbs = await conforming(h, "GET", databases, `${P}/branches/${main}/databases`);
    expect(dbs.body.databases).toEqual([
      expect.objectContaining({ name: "neondb", owner_name: "neondb_owner", branch_id: main }),
    ]);
    const password = (await h.api("GET", `${P}/branches/${main}/roles/neondb_owner/reveal_password`)).body
      .password;
    expect(password).toMatch(/^npg_[A-Za-z0-9]{12}$/);
    // The seeded child branch, and one created now, copy the parent's catalog.
    expect((await h.api("GET", `${P}/branches/${dev}/databases/neondb`)).body.database.owner_name).toBe(
      "neondb_owner",
    );
    const created = await conforming(h, "POST", "/projects/{project_id}/branches", `${P}/branches`, {
      branch: { parent_id: main, name: "preview" },
    });
    expect(created.body.roles).toEqual([expect.objectContaining({ name: "neondb_owner" })]);
    expect(created.body.databases).toEqual([expect.objectContaining({ name: "neondb" })]);
    const child = created.body.branch.id;
    const revealed = await conforming(
      h,
      "GET",
      `${role}/reveal_password`,
      `${P}/branches/${child}/roles/neondb_owner/reveal_password`,
    );
    expect(revealed.body.password).toBe(password);
  });

  it("a new role has a password from its creation; the change runs apply_config and holds the project's lock", async () => {
    const h = await startHarness();
    const { main, endpoint } = await mainBranch(h);
    const created = await conforming(h, "POST", roles, `${P}/branches/${main}/roles`, {
      role: { name: "app" },
    });
    expect(created.status).toBe(201);
    expect(created.body.role).toMatchObject({ name: "app", branch_id: main });
    expect(created.body.role.password).toMatch(/^npg_/);
    // The seeded endpoint is idle: woken for the change and suspended afterwards.
    expect(created.body.operations).toEqual([
      expect.objectContaining({ action: "apply_config", endpoint_id: endpoint, status: "running" }),
      expect.objectContaining({ action: "suspend_compute", endpoint_id: endpoint, status: "scheduling" }),
    ]);
    const busy = await conforming(h, "POST", databases, `${P}/branches/${main}/databases`, {
      database: { name: "app", owner_name: "app" },
    });
    expect(busy.status).toBe(423);
    h.clock.advance(1000);
    const revealed = await h.api("GET", `${P}/branches/${main}/roles/app/reveal_password`);
    expect(revealed.body.password).toBe(created.body.role.password);
    const got = await conforming(h, "GET", role, `${P}/branches/${main}/roles/app`);
    expect(got.body.role).not.toHaveProperty("password");
    expect(
      (await conforming(h, "POST", roles, `${P}/branches/${main}/roles`, { role: { name: "app" } })).status,
    ).toBe(409);
    const reserved = await conforming(h, "POST", roles, `${P}/branches/${main}/roles`, {
      role: { name: "pg_monitor" },
    });
    expect(reserved).toMatchObject({ status: 400, body: { message: "role.name: pg_monitor is reserved" } });
    const long = await h.api("POST", `${P}/branches/${main}/roles`, { role: { name: "r".repeat(64) } });
    expect(long).toMatchObject({ status: 400, body: { message: "role.name: cannot exceed 63 bytes" } });
    const missing = await conforming(h, "GET", role, `${P}/branches/${main}/roles/nobody`);
    expect(missing.status).toBe(404);
  });

  it("a branch with no compute changes its catalog without operations, still refused while the project is busy", async () => {
    const h = await startHarness();
    const { dev, staging } = await branchesOf(h);
    const created = await h.api("POST", `${P}/branches/${dev}/roles`, { role: { name: "app" } });
    expect(created).toMatchObject({ status: 201, body: { operations: [] } });
    await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: staging, type: "read_write" } });
    const locked = await h.api("POST", `${P}/branches/${dev}/roles`, { role: { name: "other" } });
    expect(locked.status).toBe(423);
  });

  it("a branch still being created answers 422 'branch not ready yet' to catalog changes", async () => {
    const h = await startHarness();
    const created = await h.api("POST", `${P}/branches`, { branch: { name: "young" } });
    const path = `${P}/branches/${created.body.branch.id}`;
    const early = await conforming(h, "POST", roles, `${path}/roles`, { role: { name: "app" } });
    expect(early).toMatchObject({ status: 422, body: { message: "branch not ready yet" } });
    h.clock.advance(1000);
    expect((await h.api("POST", `${path}/roles`, { role: { name: "app" } })).status).toBe(201);
  });

  it("reset_password answers a new password; reveal shows it at once", async () => {
    const h = await startHarness();
    const { main } = await mainBranch(h);
    const path = `${P}/branches/${main}/roles/neondb_owner`;
    const before = (await h.api("GET", `${path}/reveal_password`)).body.password;
    const reset = await conforming(h, "POST", `${role}/reset_password`, `${path}/reset_password`);
    expect(reset.status).toBe(200);
    expect(reset.body.role.password).toMatch(/^npg_/);
    expect(reset.body.role.password).not.toBe(before);
    expect(reset.body.operations.map((o: { action: string }) => o.action)).toEqual([
      "apply_config",
      "suspend_compute",
    ]);
    expect((await h.api("GET", `${path}/reveal_password`)).body.password).toBe(reset.body.role.password);
    expect((await h.api("POST", `${path}/reset_password`)).status).toBe(423);
  });

  it("a project that does not store passwords answers 412 to reveal_password and connection_uri", async () => {
    const h = await startHarness();
    await h.admin("POST", "/projects", { id: "no-passwords", name: "np", store_passwords: false });
    const { main } = await branchesOf(h, "no-passwords");
    const project = await h.api("GET", "/projects?search=no-passwords");
    expect(project.body.projects[0].store_passwords).toBe(false);
    h.clock.advance(2000);
    const path = `/projects/no-passwords/branches/${main}/roles/neondb_owner/reveal_password`;
    const refused = await conforming(h, "GET", `${role}/reveal_password`, path);
    expect(refused).toMatchObject({
      status: 412,
      body: { message: "storing passwords is disabled for this project" },
    });
    const uri = await h.api(
      "GET",
      "/projects/no-passwords/connection_uri?database_name=neondb&role_name=neondb_owner",
    );
    expect(uri.status).toBe(412);
    // A reset still answers the new password: the only time the user sees it.
    const reset = await h.api(
      "POST",
      `/projects/no-passwords/branches/${main}/roles/neondb_owner/reset_password`,
    );
    expect(reset.body.role.password).toMatch(/^npg_/);
  });

  it("databases: created owned by a role of the branch, renamed, given another owner, deleted", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const B = `${P}/branches/${dev}`;
    await h.api("POST", `${B}/roles`, { role: { name: "app" } });
    const orphan = await conforming(h, "POST", databases, `${B}/databases`, {
      database: { name: "shop", owner_name: "nobody" },
    });
    expect(orphan).toMatchObject({
      status: 400,
      body: { message: "database.owner_name: the branch has no role nobody" },
    });
    const reserved = await h.api("POST", `${B}/databases`, {
      database: { name: "template1", owner_name: "app" },
    });
    expect(reserved).toMatchObject({
      status: 400,
      body: { message: "database.name: template1 is reserved" },
    });
    const missingOwner = await conforming(h, "POST", databases, `${B}/databases`, {
      database: { name: "x" },
    });
    expect(missingOwner.status).toBe(400);
    const created = await conforming(h, "POST", databases, `${B}/databases`, {
      database: { name: "shop", owner_name: "app" },
    });
    expect(created).toMatchObject({ status: 201, body: { database: { name: "shop", owner_name: "app" } } });
    expect(typeof created.body.database.id).toBe("number");
    expect(
      (await h.api("POST", `${B}/databases`, { database: { name: "shop", owner_name: "app" } })).status,
    ).toBe(409);
    const renamed = await conforming(h, "PATCH", database, `${B}/databases/shop`, {
      database: { name: "store", owner_name: "neondb_owner" },
    });
    expect(renamed.body.database).toMatchObject({
      name: "store",
      owner_name: "neondb_owner",
      id: created.body.database.id,
    });
    expect((await conforming(h, "GET", database, `${B}/databases/shop`)).status).toBe(404);
    expect((await conforming(h, "GET", database, `${B}/databases/store`)).body.database.name).toBe("store");
    // A role that owns a database cannot go before it.
    const owner = await conforming(h, "DELETE", role, `${B}/roles/neondb_owner`);
    expect(owner.status).toBe(422);
    expect((await conforming(h, "DELETE", database, `${B}/databases/store`)).status).toBe(200);
    expect((await conforming(h, "DELETE", database, `${B}/databases/store`)).status).toBe(204);
    expect((await conforming(h, "DELETE", role, `${B}/roles/app`)).status).toBe(200);
    expect((await conforming(h, "DELETE", role, `${B}/roles/app`)).status).toBe(204);
    const names = (await h.api("GET", `${B}/roles`)).body.roles.map((r: { name: string }) => r.name);
    expect(names).toEqual(["neondb_owner"]);
  });
});
