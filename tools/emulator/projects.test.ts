// Projects through the platform API: created with a default branch, role, database and
// read-write endpoint (create_timeline, then start_compute, under the new project's lock), read,
// changed (name, settings, default endpoint settings, history retention; nothing fixed at
// creation), deleted (404 afterwards, recoverable for 7 days), refused as the platform refuses.
// Every answer is checked against the OpenAPI document.
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";
import { conforming } from "../../test/emulator/openapi.ts";

const list = "/projects";
const one = "/projects/{project_id}";

const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => undefined)));
});

/** Connects with nothing but the URI; answers "connected" or the refusal's code. */
async function attempt(uri: string): Promise<string> {
  const client = new pg.Client({ connectionString: uri });
  client.on("error", () => undefined);
  clients.push(client);
  try {
    await client.connect();
    const { rows } = await client.query("select current_database() as db, current_user as who");
    return `connected to ${rows[0].db} as ${rows[0].who}`;
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

const create = (h: Harness, project: Record<string, unknown> = {}) =>
  conforming(h, "POST", list, "/projects", { project });

/** Lets a project's operations finish (each lasts 1 s of emulated time in the harness). */
const settle = (h: Harness) => h.clock.advance(10_000);

describe("creating a project", () => {
  it("makes its default branch, owner role, database and read-write endpoint, and connection URIs that connect", async () => {
    const h = await startHarness();
    const created = await create(h, { name: "shop" });
    expect(created.status).toBe(201);
    const { project, branch, endpoints, roles, databases, connection_uris, operations } = created.body;
    expect(project).toMatchObject({
      name: "shop",
      region_id: "aws-us-east-2",
      pg_version: 17,
      history_retention_seconds: 86_400,
      store_passwords: true,
      default_endpoint_settings: { autoscaling_limit_min_cu: 1, autoscaling_limit_max_cu: 1 },
      settings: {},
      owner: { email: "user@example.com", subscription_type: "scale_v3" },
    });
    expect(branch).toMatchObject({ name: "main", default: true, current_state: "init" });
    expect(endpoints).toEqual([
      expect.objectContaining({
        branch_id: branch.id,
        type: "read_write",
        current_state: "init",
        pending_state: "active",
      }),
    ]);
    expect(roles).toEqual([expect.objectContaining({ name: "neondb_owner", password: expect.any(String) })]);
    expect(databases).toEqual([expect.objectContaining({ name: "neondb", owner_name: "neondb_owner" })]);
    expect(operations.map((o: { action: string; status: string }) => [o.action, o.status])).toEqual([
      ["create_timeline", "running"],
      ["start_compute", "scheduling"],
    ]);
    expect(connection_uris[0].connection_parameters).toMatchObject({
      database: "neondb",
      role: "neondb_owner",
      password: roles[0].password,
    });
    expect(await attempt(connection_uris[0].connection_uri)).toBe("connected to neondb as neondb_owner");

    settle(h);
    const endpoint = await h.api("GET", `/projects/${project.id}/endpoints/${endpoints[0].id}`);
    expect(endpoint.body.endpoint.current_state).toBe("active");
    const ready = await h.api("GET", `/projects/${project.id}/branches/${branch.id}`);
    expect(ready.body.branch.current_state).toBe("ready");
    const ops = await h.api("GET", `/projects/${project.id}/operations`);
    expect(ops.body.operations.map((o: { status: string }) => o.status)).toEqual(["finished", "finished"]);
  });

  it("takes every field of the document, and the new project's name is its id when not given", async () => {
    const h = await startHarness();
    const settings = {
      allowed_ips: {
        ips: ["203.0.113.7", "10.0.0.0/8", "192.168.1.1-192.168.1.15"],
        protected_branches_only: true,
      },
      enable_logical_replication: true,
      maintenance_window: { weekdays: [6, 7], start_time: "01:00", end_time: "03:30" },
      block_public_connections: false,
      block_vpc_connections: false,
      audit_log_level: "extended",
      hipaa: false,
      preload_libraries: { use_defaults: true, enabled_libraries: ["pg_cron"] },
      quota: { active_time_seconds: 3600, logical_size_bytes: 1_000_000_000 },
    };
    const created = await create(h, {
      region_id: "aws-eu-central-1",
      pg_version: 16,
      history_retention_seconds: 604_800,
      store_passwords: false,
      branch: { name: "production", database_name: "app", annotations: { owner: "k8s-mark" } },
      default_endpoint_settings: {
        autoscaling_limit_min_cu: 0.5,
        autoscaling_limit_max_cu: 4,
        suspend_timeout_seconds: 600,
        pg_settings: { work_mem: "8MB" },
      },
      settings,
    });
    const { project, branch, endpoints, roles } = created.body;
    expect(project.name).toBe(project.id);
    expect(project).toMatchObject({
      region_id: "aws-eu-central-1",
      proxy_host: "eu-central-1.aws.neon.tech",
      pg_version: 16,
      history_retention_seconds: 604_800,
      store_passwords: false,
      settings,
    });
    // The document: the role is `{database_name}_owner` when not named.
    expect(roles[0].name).toBe("app_owner");
    expect(branch.name).toBe("production");
    expect(endpoints[0]).toMatchObject({
      autoscaling_limit_min_cu: 0.5,
      autoscaling_limit_max_cu: 4,
      suspend_timeout_seconds: 600,
    });
    const read = await conforming(h, "GET", one, `/projects/${project.id}`);
    expect(read.body.project).toMatchObject({
      settings,
      default_endpoint_settings: { pg_settings: { work_mem: "8MB" } },
    });
    const annotated = await h.api("GET", `/projects/${project.id}/branches/${branch.id}`);
    expect(annotated.body.annotation.value).toEqual({ owner: "k8s-mark" });
  });

  it("holds the new project's lock while its operations run: a change is 423, and its branch is not ready", async () => {
    const h = await startHarness();
    const { project, branch } = (await create(h)).body;
    const rename = await conforming(h, "PATCH", one, `/projects/${project.id}`, {
      project: { name: "later" },
    });
    expect(rename.status).toBe(423);
    const endpoint = await h.api("POST", `/projects/${project.id}/endpoints`, {
      endpoint: { branch_id: branch.id, type: "read_only" },
    });
    expect(endpoint).toMatchObject({ status: 422, body: { message: "branch not ready yet" } });
    expect((await h.api("DELETE", `/projects/${project.id}`)).status).toBe(423);
    settle(h);
    expect((await h.api("PATCH", `/projects/${project.id}`, { project: { name: "later" } })).status).toBe(
      200,
    );
  });

  it.each([
    [{}, 400, /^project: /],
    [{ project: { pg_version: 13 } }, 400, /^project\.pg_version: /],
    [{ project: { pg_version: 19 } }, 400, /^project\.pg_version: /],
    [{ project: { pg_version: "17" } }, 400, /^project\.pg_version: /],
    [{ project: { region_id: "aws-mars-1" } }, 400, /^region_id: aws-mars-1 is not a supported region/],
    [{ project: { name: "" } }, 400, /^project\.name: /],
    [{ project: { name: "x".repeat(257) } }, 400, /^project\.name: /],
    [{ project: { org_id: "Org_1" } }, 400, /^project\.org_id: /],
    [{ project: { history_retention_seconds: 2_592_001 } }, 400, /^project\.history_retention_seconds: /],
    [{ project: { history_retention_seconds: -1 } }, 400, /^project\.history_retention_seconds: /],
    [{ project: { provisioner: "k8s-vm" } }, 400, /^project\.provisioner: /],
    [
      { project: { branch: { role_name: "postgres" } } },
      400,
      /^project\.branch\.role_name: postgres is reserved/,
    ],
    [
      { project: { branch: { role_name: "pg_admin" } } },
      400,
      /^project\.branch\.role_name: pg_admin is reserved/,
    ],
    [
      { project: { branch: { database_name: "template1" } } },
      400,
      /^project\.branch\.database_name: template1/,
    ],
    [
      { project: { branch: { database_name: "d".repeat(64) } } },
      400,
      /^project\.branch\.database_name: cannot exceed 63 bytes/,
    ],
    [{ project: { branch: { name: "" } } }, 400, /^project\.branch\.name: /],
    [
      {
        project: {
          branch: { annotations: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, "v"])) },
        },
      },
      400,
      /^project\.branch\.annotations: at most 50 entries/,
    ],
    [{ project: { branch: { annotations: { n: 1 } } } }, 400, /^project\.branch\.annotations\.n: /],
    [
      { project: { default_endpoint_settings: { autoscaling_limit_min_cu: 0.3 } } },
      400,
      /^default_endpoint_settings\.autoscaling_limit_min_cu: invalid compute size 0\.3/,
    ],
    [
      {
        project: { default_endpoint_settings: { autoscaling_limit_min_cu: 4, autoscaling_limit_max_cu: 2 } },
      },
      400,
      /^default_endpoint_settings\.autoscaling_limit_min_cu must not exceed/,
    ],
    [
      {
        project: { default_endpoint_settings: { autoscaling_limit_min_cu: 1, autoscaling_limit_max_cu: 10 } },
      },
      400,
      /more than 8 CU/,
    ],
    [
      { project: { default_endpoint_settings: { suspend_timeout_seconds: 604_801 } } },
      400,
      /suspend_timeout_seconds/,
    ],
    [
      { project: { settings: { allowed_ips: { ips: ["10.0.0.300"] } } } },
      400,
      /^project\.settings\.allowed_ips\.ips\.0: /,
    ],
    [{ project: { settings: { allowed_ips: { ips: ["10.0.0.0/33"] } } } }, 400, /allowed_ips\.ips\.0/],
    [{ project: { settings: { allowed_ips: { ips: ["10.0.0.1-::1"] } } } }, 400, /allowed_ips\.ips\.0/],
    [
      {
        project: {
          settings: { maintenance_window: { weekdays: [8], start_time: "01:00", end_time: "02:00" } },
        },
      },
      400,
      /maintenance_window\.weekdays\.0/,
    ],
    [
      {
        project: {
          settings: { maintenance_window: { weekdays: [1, 1], start_time: "01:00", end_time: "02:00" } },
        },
      },
      400,
      /maintenance_window\.weekdays: each weekday at most once/,
    ],
    [
      {
        project: {
          settings: { maintenance_window: { weekdays: [1], start_time: "24:00", end_time: "02:00" } },
        },
      },
      400,
      /maintenance_window\.start_time: must be "HH:MM"/,
    ],
    [
      { project: { settings: { maintenance_window: { weekdays: [1] } } } },
      400,
      /maintenance_window\.start_time/,
    ],
    [{ project: { settings: { audit_log_level: "verbose" } } }, 400, /settings\.audit_log_level/],
    [{ project: { settings: { quota: { written_data_bytes: -1 } } } }, 400, /quota\.written_data_bytes/],
    [{ project: { settings: { hipaa: "yes" } } }, 400, /settings\.hipaa/],
  ])("refuses %j with %i naming the field", async (body, status, message) => {
    const h = await startHarness();
    const res = await conforming(h, "POST", list, "/projects", body);
    expect(res.status).toBe(status);
    expect(res.body.message).toMatch(message);
    expect(res.body.code).toBe("");
    // Nothing was made.
    expect((await h.api("GET", "/projects")).body.projects.map((p: { id: string }) => p.id)).toEqual([
      "demo-project",
    ]);
  });
});

describe("reading and changing a project", () => {
  it("GET answers the project with its owner and consumption; an unknown one is 404", async () => {
    const h = await startHarness();
    const read = await conforming(h, "GET", one, "/projects/demo-project");
    expect(read.body.project).toMatchObject({
      id: "demo-project",
      history_retention_seconds: 86_400,
      compute_time_seconds: 0,
      owner: { name: "Emulated User" },
    });
    expect((await conforming(h, "GET", one, "/projects/no-such-project")).status).toBe(404);
  });

  it("a retention change runs apply_storage_config under the lock; the same value runs nothing", async () => {
    const h = await startHarness();
    const changed = await conforming(h, "PATCH", one, "/projects/demo-project", {
      project: { history_retention_seconds: 3600 },
    });
    expect(changed.body.project.history_retention_seconds).toBe(3600);
    expect(changed.body.operations).toEqual([
      expect.objectContaining({ action: "apply_storage_config", status: "running" }),
    ]);
    expect(changed.body.operations[0]).not.toHaveProperty("branch_id");
    const { dev } = await branchesOf(h);
    const busy = await h.api("POST", "/projects/demo-project/endpoints", {
      endpoint: { branch_id: dev, type: "read_write" },
    });
    expect(busy.status).toBe(423);
    settle(h);
    const same = await conforming(h, "PATCH", one, "/projects/demo-project", {
      project: { history_retention_seconds: 3600, name: "renamed" },
    });
    expect(same.body).toMatchObject({ project: { name: "renamed" }, operations: [] });
  });

  it("settings given replace those keys and keep the others; default endpoint settings apply to new endpoints", async () => {
    const h = await startHarness();
    const P = "/projects/demo-project";
    await conforming(h, "PATCH", one, P, {
      project: { settings: { allowed_ips: { ips: ["203.0.113.0/24"], protected_branches_only: true } } },
    });
    const window = { weekdays: [1], start_time: "22:00", end_time: "23:00" };
    const both = await conforming(h, "PATCH", one, P, {
      project: { settings: { maintenance_window: window } },
    });
    expect(both.body.project.settings).toEqual({
      allowed_ips: { ips: ["203.0.113.0/24"], protected_branches_only: true },
      maintenance_window: window,
    });
    // An allowed_ips given is that whole value: what it leaves out is gone.
    const replaced = await conforming(h, "PATCH", one, P, {
      project: { settings: { allowed_ips: { ips: [] } } },
    });
    expect(replaced.body.project.settings.allowed_ips).toEqual({ ips: [] });

    const defaults = await conforming(h, "PATCH", one, P, {
      project: { default_endpoint_settings: { autoscaling_limit_max_cu: 2, suspend_timeout_seconds: 900 } },
    });
    expect(defaults.body.project.default_endpoint_settings).toEqual({
      autoscaling_limit_min_cu: 1,
      autoscaling_limit_max_cu: 2,
      suspend_timeout_seconds: 900,
    });
    const { staging } = await branchesOf(h);
    const endpoint = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: staging, type: "read_write" },
    });
    expect(endpoint.body.endpoint).toMatchObject({
      autoscaling_limit_min_cu: 1,
      autoscaling_limit_max_cu: 2,
      suspend_timeout_seconds: 900,
    });
  });

  it.each([
    [{ region_id: "aws-us-east-1" }, /^project\.region_id: cannot be changed/],
    [{ pg_version: 16 }, /^project\.pg_version: cannot be changed/],
    [{ org_id: "org-else-12345678" }, /^project\.org_id: cannot be changed/],
    [{ store_passwords: false }, /^project\.store_passwords: cannot be changed/],
    [{ branch: { name: "trunk" } }, /^project\.branch: cannot be changed/],
    [{ history_retention_seconds: 2_592_001 }, /^project\.history_retention_seconds: /],
    [{ name: "" }, /^project\.name: /],
    [
      { default_endpoint_settings: { autoscaling_limit_max_cu: 0.5 } },
      /autoscaling_limit_min_cu must not exceed/,
    ],
  ])("refuses a change of %j (400), changing nothing", async (change, message) => {
    const h = await startHarness();
    const res = await conforming(h, "PATCH", one, "/projects/demo-project", { project: change });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(message);
    const after = (await h.api("GET", "/projects/demo-project")).body.project;
    expect(after).toMatchObject({ name: "demo", region_id: "aws-us-east-2", pg_version: 17 });
  });

  it("logical replication: turning it on suspends the active endpoints; turning it off is refused", async () => {
    const h = await startHarness();
    const P = "/projects/demo-project";
    const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    await h.api("POST", `${P}/endpoints/${seeded.id}/start`);
    settle(h);
    const on = await conforming(h, "PATCH", one, P, {
      project: { settings: { enable_logical_replication: true } },
    });
    expect(on.body.operations).toEqual([
      expect.objectContaining({ action: "suspend_compute", endpoint_id: seeded.id, status: "running" }),
    ]);
    settle(h);
    expect((await h.api("GET", `${P}/endpoints/${seeded.id}`)).body.endpoint.current_state).toBe("idle");
    const again = await conforming(h, "PATCH", one, P, {
      project: { settings: { enable_logical_replication: true } },
    });
    expect(again.body.operations).toEqual([]);
    const off = await conforming(h, "PATCH", one, P, {
      project: { settings: { enable_logical_replication: false } },
    });
    expect(off.status).toBe(422);
    expect(off.body.message).toMatch(
      /^settings\.enable_logical_replication: cannot be turned off once enabled/,
    );
    // A change of another setting leaves it on.
    const other = await h.api("PATCH", P, { project: { settings: { block_vpc_connections: true } } });
    expect(other.body.project.settings).toMatchObject({
      enable_logical_replication: true,
      block_vpc_connections: true,
    });
  });

  it("HIPAA, once on, stays on and shows since when", async () => {
    const h = await startHarness();
    const on = await conforming(h, "PATCH", one, "/projects/demo-project", {
      project: { settings: { hipaa: true } },
    });
    expect(on.body.project.hipaa_enabled_at).toMatch(/Z$/);
    const off = await h.api("PATCH", "/projects/demo-project", { project: { settings: { hipaa: false } } });
    expect(off).toMatchObject({
      status: 422,
      body: { message: expect.stringMatching(/^settings\.hipaa: cannot be turned off/) },
    });
  });
});

describe("deleting a project", () => {
  it("takes everything in it: 404 on it and its routes afterwards, its URI no longer connects; recoverable for 7 days", async () => {
    const h = await startHarness();
    const created = (await create(h, { name: "doomed" })).body;
    const id = created.project.id as string;
    const uri = created.connection_uris[0].connection_uri as string;
    settle(h);
    const deleted = await conforming(h, "DELETE", one, `/projects/${id}`);
    expect(deleted.body.project).toMatchObject({ id, name: "doomed" });
    for (const path of ["", "/endpoints", "/branches", "/operations", `/branches/${created.branch.id}`]) {
      const res = await h.api("GET", `/projects/${id}${path}`);
      expect(res.status, path).toBe(404);
    }
    expect((await conforming(h, "DELETE", one, `/projects/${id}`)).status).toBe(404);
    expect((await conforming(h, "PATCH", one, `/projects/${id}`, { project: { name: "x" } })).status).toBe(
      404,
    );
    expect((await h.api("GET", "/projects")).body.projects.map((p: { id: string }) => p.id)).toEqual([
      "demo-project",
    ]);
    expect(await attempt(uri)).toBe("ECONNREFUSED");

    const recoverable = await conforming(h, "GET", list, "/projects?recoverable=true");
    expect(recoverable.body.projects).toEqual([
      expect.objectContaining({ id, deleted_at: expect.any(String), recoverable_until: expect.any(String) }),
    ]);
    const recovered = await conforming(h, "POST", `${one}/recover`, `/projects/${id}/recover`);
    expect(recovered.body.project.id).toBe(id);
    expect(recovered.body.branches.map((b: { id: string }) => b.id)).toEqual([created.branch.id]);
    const endpoints = (await h.api("GET", `/projects/${id}/endpoints`)).body.endpoints;
    expect(endpoints).toEqual([
      expect.objectContaining({ id: created.endpoints[0].id, current_state: "idle" }),
    ]);
    // Its operations are back, the deletion's own last.
    const ops = (await h.api("GET", `/projects/${id}/operations`)).body.operations;
    expect(ops.map((o: { action: string }) => o.action)).toEqual([
      "delete_tenant",
      "start_compute",
      "create_timeline",
    ]);
    // Its data too: a fresh URI (new ports) reaches the same database.
    const fresh = await h.api(
      "GET",
      `/projects/${id}/connection_uri?database_name=neondb&role_name=neondb_owner`,
    );
    expect(await attempt(fresh.body.uri)).toBe("connected to neondb as neondb_owner");
    expect((await conforming(h, "POST", `${one}/recover`, `/projects/${id}/recover`)).status).toBe(404);
  });

  it("is gone for good after 7 days", async () => {
    const h = await startHarness();
    await conforming(h, "DELETE", one, "/projects/demo-project");
    h.clock.advance(7 * 24 * 3600 * 1000 - 1000);
    expect((await h.api("GET", "/projects?recoverable=true")).body.projects).toHaveLength(1);
    h.clock.advance(1000);
    expect((await h.api("GET", "/projects?recoverable=true")).body.projects).toEqual([]);
    expect((await h.api("POST", "/projects/demo-project/recover")).status).toBe(404);
  });

  it("of another account, or to recover another account's, is 404", async () => {
    const h = await startHarness({
      seed: {
        projects: [{ id: "mine", name: "mine" }],
        accounts: [{ bootstrap_key: { key: "k".repeat(64) }, projects: [{ id: "theirs", name: "theirs" }] }],
      },
    });
    expect((await h.api("DELETE", "/projects/theirs")).status).toBe(404);
    await h.api("DELETE", "/projects/theirs", undefined, { key: "k".repeat(64) });
    expect((await h.api("POST", "/projects/theirs/recover")).status).toBe(404);
    expect((await h.api("GET", "/projects?recoverable=true")).body.projects).toEqual([]);
  });
});

describe("listing projects", () => {
  const many = {
    projects: Array.from({ length: 23 }, (_, i) => ({
      id: `p-${String(i).padStart(2, "0")}`,
      name: `n${i}`,
    })),
  };

  it("pages by id: 10 without a limit, the last project id as the cursor, until a page comes back empty", async () => {
    const h = await startHarness({ seed: many });
    const first = await conforming(h, "GET", list, "/projects");
    expect(first.body.projects).toHaveLength(10);
    expect(first.body.pagination.cursor).toBe("p-09");
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await conforming(h, "GET", list, `/projects?limit=7${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...page.body.projects.map((p: { id: string }) => p.id));
      if (page.body.projects.length === 0) {
        expect(page.body).not.toHaveProperty("pagination");
        break;
      }
      cursor = page.body.pagination.cursor;
    }
    expect(seen).toEqual(many.projects.map((p) => p.id));
    // A cursor whose project is gone since still marks the place.
    await h.api("DELETE", "/projects/p-09");
    const after = await h.api("GET", "/projects?limit=2&cursor=p-09");
    expect(after.body.projects.map((p: { id: string }) => p.id)).toEqual(["p-10", "p-11"]);
    const all = await conforming(h, "GET", list, "/projects?limit=400");
    expect(all.body.projects).toHaveLength(22);
  });

  it.each([
    "limit=0",
    "limit=401",
    "limit=ten",
    "limit=1.5",
    "timeout=50",
    "timeout=30001",
    "org_id=Org_X",
    "recoverable=yes",
  ])("refuses %s (400)", async (query) => {
    const h = await startHarness();
    const res = await conforming(h, "GET", list, `/projects?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(new RegExp(`^${query.split("=")[0]}: `));
  });

  it("searches names and ids; names projects whose details did not load apart (a fault)", async () => {
    const h = await startHarness({ seed: many });
    const found = await conforming(h, "GET", list, "/projects?search=N1&timeout=1000");
    expect(found.body.projects.map((p: { name: string }) => p.name)).toEqual([
      "n1",
      "n10",
      "n11",
      "n12",
      "n13",
      "n14",
      "n15",
      "n16",
      "n17",
      "n18",
    ]);
    await h.admin("PUT", "/faults", { unavailable_projects: ["p-01", "p-03"] });
    const page = await conforming(h, "GET", list, "/projects?limit=5");
    expect(page.body.projects.map((p: { id: string }) => p.id)).toEqual(["p-00", "p-02", "p-04"]);
    expect(page.body.unavailable_project_ids).toEqual(["p-01", "p-03"]);
    expect(page.body.pagination.cursor).toBe("p-04");
  });
});

describe("organizations", () => {
  const orgKey = "o".repeat(64);
  const seed = {
    account: { organizations: [{ id: "org-team-11111111", name: "Team" }] },
    projects: [{ id: "team-project", name: "team", org_id: "org-team-11111111" }],
    accounts: [
      {
        account: { kind: "organization" as const, id: "org-acme-22222222", name: "Acme" },
        bootstrap_key: { key: orgKey },
      },
    ],
  };

  it("a user's key names one of its organizations to create or list; an organization's key implies its own", async () => {
    const h = await startHarness({ seed });
    const unnamed = await conforming(h, "POST", list, "/projects", { project: {} });
    expect(unnamed).toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/^org_id is required/) },
    });
    const foreign = await conforming(h, "POST", list, "/projects", {
      project: { org_id: "org-acme-22222222" },
    });
    expect(foreign.status).toBe(404);
    const named = await conforming(h, "POST", list, "/projects", {
      project: { org_id: "org-team-11111111" },
    });
    expect(named.body.project.org_id).toBe("org-team-11111111");
    const listed = await h.api("GET", "/projects?org_id=org-team-11111111");
    expect(listed.body.projects).toHaveLength(2);

    const org = await h.api("POST", "/projects", { project: { name: "acme-app" } }, { key: orgKey });
    expect(org.body.project).toMatchObject({ org_id: "org-acme-22222222", owner_id: "org-acme-22222222" });
    const wrong = await h.api("GET", "/projects?org_id=org-team-11111111", undefined, { key: orgKey });
    expect(wrong.status).toBe(404);
  });

  it("orgIdRequired: false lets a user's key list all of its projects and create personal ones", async () => {
    const h = await startHarness({ seed, orgIdRequired: false });
    const created = await h.api("POST", "/projects", { project: { name: "personal" } });
    expect(created.status).toBe(201);
    expect(created.body.project).not.toHaveProperty("org_id");
    expect((await h.api("GET", "/projects")).body.projects).toHaveLength(2);
  });
});

describe("plan limits", () => {
  it("the free plan: retention within 6 hours as the platform words it, compute fixed at 0.25 CU, no read replicas", async () => {
    const h = await startHarness({
      seed: {
        limits: { plan: "free" },
        projects: [{ id: "demo-project", name: "demo", branches: [{ name: "dev" }] }],
      },
    });
    const P = "/projects/demo-project";
    const created = await create(h);
    expect(created.body.project.history_retention_seconds).toBe(21_600);
    expect(created.body.project.default_endpoint_settings).toMatchObject({
      autoscaling_limit_min_cu: 0.25,
      autoscaling_limit_max_cu: 0.25,
    });
    expect(created.body.endpoints[0]).toMatchObject({
      autoscaling_limit_min_cu: 0.25,
      autoscaling_limit_max_cu: 0.25,
    });
    const retention = await conforming(h, "POST", list, "/projects", {
      project: { history_retention_seconds: 86_400 },
    });
    expect(retention).toMatchObject({
      status: 400,
      body: {
        code: "",
        message:
          'requested history retention seconds exceeds allowed maximum; requested_history_retention_seconds:"86400", max:"21600"',
      },
    });
    const patched = await conforming(h, "PATCH", one, P, { project: { history_retention_seconds: 21_601 } });
    expect(patched.body.message).toMatch(/max:"21600"$/);
    const compute = await h.api("POST", "/projects", {
      project: { default_endpoint_settings: { autoscaling_limit_min_cu: 0.25, autoscaling_limit_max_cu: 1 } },
    });
    expect(compute).toMatchObject({
      status: 400,
      body: {
        message:
          "default_endpoint_settings.autoscaling_limit_max_cu: the free plan allows a fixed size of 0.25 CU, got 1",
      },
    });

    const { dev } = await branchesOf(h);
    const sized = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_write", autoscaling_limit_max_cu: 0.5 },
    });
    expect(sized.status).toBe(400);
    expect(sized.body.message).toMatch(
      /^autoscaling_limit_min_cu: the free plan allows a fixed size of 0\.25 CU/,
    );
    const replica = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_only" },
    });
    expect(replica).toMatchObject({
      status: 422,
      body: { message: "read replicas are not available on the free plan" },
    });
    const branch = await h.api("POST", `${P}/branches`, {
      endpoints: [{ type: "read_write", autoscaling_limit_min_cu: 0.25, autoscaling_limit_max_cu: 2 }],
    });
    expect(branch.body.message).toMatch(/^endpoints\[0\]\.autoscaling_limit_max_cu: the free plan/);
    // Within the plan: the project's defaults (0.25 CU) for an endpoint that names no size.
    const fits = await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write" } });
    expect(fits.body.endpoint).toMatchObject({
      autoscaling_limit_min_cu: 0.25,
      autoscaling_limit_max_cu: 0.25,
    });
    const me = await h.api("GET", "/users/me");
    expect(me.body).toMatchObject({ plan: "free", max_autoscaling_limit: 0.25, projects_limit: 100 });
  });

  it("the project count: one more is refused with the platform's code, a deletion makes room, a recovery counts", async () => {
    const h = await startHarness({
      seed: { limits: { plan: "launch", max_projects: 2 }, projects: [{ id: "demo-project", name: "demo" }] },
    });
    const second = await create(h);
    expect(second.status).toBe(201);
    const third = await conforming(h, "POST", list, "/projects", { project: {} });
    expect(third).toMatchObject({
      status: 422,
      body: { code: "PROJECTS_LIMIT_EXCEEDED", message: "user projects limit of 2 exceeded, got 2" },
    });
    await h.api("DELETE", "/projects/demo-project");
    const replacement = await create(h);
    expect(replacement.status).toBe(201);
    const recover = await conforming(h, "POST", `${one}/recover`, "/projects/demo-project/recover");
    expect(recover).toMatchObject({ status: 422, body: { code: "PROJECTS_LIMIT_EXCEEDED" } });
  });

  it("the admin API reads and replaces an account's limits (a reset brings back the seed's)", async () => {
    const h = await startHarness();
    const [accountId] = h.emulator.bootstrapKeys.keys();
    const read = await h.admin("GET", `/accounts/${accountId}/limits`);
    expect(read.body).toEqual({
      plan: "scale",
      max_projects: 1000,
      max_history_retention_seconds: 2_592_000,
      max_compute_units: 56,
      read_replicas: true,
    });
    const put = await h.admin("PUT", `/accounts/${accountId}/limits`, {
      plan: "launch",
      max_history_retention_seconds: 3600,
    });
    expect(put.body).toMatchObject({
      plan: "launch",
      max_history_retention_seconds: 3600,
      max_compute_units: 16,
    });
    const refused = await h.api("PATCH", "/projects/demo-project", {
      project: { history_retention_seconds: 7200 },
    });
    expect(refused.body.message).toMatch(/max:"3600"$/);
    expect((await h.admin("PUT", `/accounts/${accountId}/limits`, { max_compute_units: 0.3 })).status).toBe(
      400,
    );
    expect((await h.admin("GET", "/accounts/nobody/limits")).status).toBe(404);
    await h.admin("POST", "/reset");
    expect((await h.admin("GET", `/accounts/${accountId}/limits`)).body.plan).toBe("scale");
  });
});

describe("regions", () => {
  it("GET /regions lists where a project may go, the default first among equals", async () => {
    const h = await startHarness();
    const res = await conforming(h, "GET", "/regions", "/regions");
    const ids = res.body.regions.map((r: { region_id: string }) => r.region_id);
    expect(ids).toContain("aws-eu-central-1");
    expect(res.body.regions.filter((r: { default: boolean }) => r.default)).toEqual([
      expect.objectContaining({ region_id: "aws-us-east-2" }),
    ]);
    for (const region_id of ids) {
      expect((await h.api("POST", "/projects", { project: { region_id } })).status, region_id).toBe(201);
    }
  });
});
