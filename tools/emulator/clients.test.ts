// The official clients work against the emulator unchanged: the SDK
// (@neon/sdk), the older @neondatabase/api-client, and the neonctl CLI.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createNeonClient } from "@neon/sdk";
import pg from "pg";
import { EndpointType, createApiClient } from "@neondatabase/api-client";
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";
import { neonctlFor, type Neonctl } from "../../test/emulator/neonctl.ts";
import { createClock } from "./clock.ts";

const projectId = "demo-project";

/** Real time, so the clients' own polling and retries see operations finish. */
const realTime = { clock: createClock(), operationDurationMs: 30 };

describe("@neon/sdk", () => {
  it("manages endpoints, waits for operations, retries 423, and manages keys", async () => {
    const h = await startHarness(realTime);
    const { dev, staging } = await branchesOf(h);
    const neon = createNeonClient({
      apiKey: h.emulator.bootstrapKey,
      baseUrl: h.emulator.url,
      throwOnError: true,
      wait: { pollIntervalMs: 20, timeoutMs: 10_000 },
    });
    const { endpoints } = neon.postgres;

    const projects = await neon.projects.list().all();
    expect(projects.map((p) => p.id)).toEqual([projectId]);

    const created = await endpoints.create(
      {
        projectId,
        branch_id: dev!,
        type: "read_write",
        autoscaling_limit_min_cu: 0.25,
        autoscaling_limit_max_cu: 2,
      },
      { waitForReadiness: true },
    );
    expect((await endpoints.get({ projectId, endpointId: created.id })).current_state).toBe("active");
    // The branch is busy right after this create; the SDK retries the 423 until it is not.
    const replica = await endpoints.create({ projectId, branch_id: dev!, type: "read_only" });
    const second = await endpoints.create({ projectId, branch_id: dev!, type: "read_only" });
    await endpoints.create({ projectId, branch_id: staging!, type: "read_write" });
    const counters = (await h.admin("GET", "/counters")).body;
    expect(counters.by_route["POST /projects/:project_id/endpoints"]["423"]).toBeGreaterThanOrEqual(1);
    expect((await endpoints.listByBranch({ projectId, branchId: dev! })).map((e) => e.id).sort()).toEqual(
      [created.id, replica.id, second.id].sort(),
    );

    const updated = await endpoints.update(
      { projectId, endpointId: created.id, suspend_timeout_seconds: 3600 },
      { waitForReadiness: true },
    );
    expect(updated.suspend_timeout_seconds).toBe(3600);
    await endpoints.suspend({ projectId, endpointId: created.id }, { waitForReadiness: true });
    expect((await endpoints.get({ projectId, endpointId: created.id })).current_state).toBe("idle");
    await endpoints.start({ projectId, endpointId: created.id }, { waitForReadiness: true });
    await endpoints.restart({ projectId, endpointId: created.id }, { waitForReadiness: true });
    expect((await endpoints.get({ projectId, endpointId: created.id })).current_state).toBe("active");

    const operations = await neon.operations.list({ projectId }).all();
    expect(operations.length).toBeGreaterThanOrEqual(7);
    expect((await neon.operations.get({ projectId, operationId: operations[0]!.id })).id).toBe(
      operations[0]!.id,
    );

    await endpoints.delete({ projectId, endpointId: replica.id }, { waitForReadiness: true });
    const missing = await endpoints.get({ projectId, endpointId: replica.id }, { throwOnError: false });
    expect(missing.error?.kind).toBe("not_found");

    const key = await neon.apiKeys.create({ keyName: "sdk" });
    expect((await neon.apiKeys.list()).map((k) => k.name)).toContain("sdk");
    expect((await neon.apiKeys.revoke({ keyId: key.id })).revoked).toBe(true);
    const revoked = createNeonClient({ apiKey: key.key, baseUrl: h.emulator.url });
    expect((await revoked.apiKeys.list()).error?.kind).toBe("auth");
  });

  it("manages roles and databases, reveals and resets passwords, resets a branch from its parent", async () => {
    const h = await startHarness(realTime);
    const { main, dev } = await branchesOf(h);
    const neon = createNeonClient({
      apiKey: h.emulator.bootstrapKey,
      baseUrl: h.emulator.url,
      throwOnError: true,
      wait: { pollIntervalMs: 20, timeoutMs: 10_000 },
    });
    const { roles, databases } = neon.postgres;
    const role = await roles.create({ projectId, branchId: dev!, name: "sdk_app" });
    expect(role.password).toMatch(/^npg_/);
    expect(await roles.password({ projectId, branchId: dev!, roleName: "sdk_app" })).toBe(role.password);
    const reset = await roles.resetPassword({ projectId, branchId: dev!, roleName: "sdk_app" });
    expect(reset.password).not.toBe(role.password);
    await databases.create({ projectId, branchId: dev!, name: "sdk_db", owner_name: "sdk_app" });
    expect((await databases.list({ projectId, branchId: dev! })).map((d) => d.name).sort()).toEqual([
      "neondb",
      "sdk_db",
    ]);
    await neon.branches.resetFromParent({ projectId, branchId: dev! });
    expect((await roles.list({ projectId, branchId: dev! })).map((r) => r.name)).toEqual(["neondb_owner"]);
    const uri = await neon.postgres.connectionString({ projectId, branchId: main!, pooled: false });
    const password = await roles.password({ projectId, branchId: main!, roleName: "neondb_owner" });
    expect(new URL(uri).password).toBe(password);
  });
});

describe("@neon/sdk projects", () => {
  it("creates (waiting for its operations), connects, reads, lists, updates, deletes and recovers a project", async () => {
    const h = await startHarness(realTime);
    const neon = createNeonClient({
      apiKey: h.emulator.bootstrapKey,
      baseUrl: h.emulator.url,
      throwOnError: true,
      wait: { pollIntervalMs: 20, timeoutMs: 10_000 },
    });
    const created = await neon.projects.create({
      name: "sdk-project",
      region_id: "aws-eu-central-1",
      pg_version: 16,
      history_retention_seconds: 3600,
      settings: { allowed_ips: { ips: ["203.0.113.0/24"] } },
    });
    expect(created).toMatchObject({ name: "sdk-project", region_id: "aws-eu-central-1", pg_version: 16 });
    // The wait is over: the default branch's compute is running.
    const [endpoint] = await neon.postgres.endpoints.list({ projectId: created.id });
    expect(endpoint?.current_state).toBe("active");

    const { project: connected, connectionString } = await neon.projects.createAndConnect({
      name: "sdk-connected",
    });
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      expect((await client.query("select current_database() as db")).rows).toEqual([{ db: "neondb" }]);
    } finally {
      await client.end();
    }

    expect((await neon.projects.get({ projectId: created.id })).history_retention_seconds).toBe(3600);
    const ids = (await neon.projects.list({ limit: 1 }).all()).map((p) => p.id);
    expect(ids.sort()).toEqual([projectId, created.id, connected.id].sort());
    const updated = await neon.projects.update({
      projectId: created.id,
      name: "sdk-renamed",
      default_endpoint_settings: { autoscaling_limit_max_cu: 2 },
    });
    expect(updated).toMatchObject({
      name: "sdk-renamed",
      default_endpoint_settings: { autoscaling_limit_max_cu: 2 },
    });
    await neon.projects.delete({ projectId: created.id });
    const gone = await neon.projects.get({ projectId: created.id }, { throwOnError: false });
    expect(gone.error?.kind).toBe("not_found");
    expect((await neon.projects.recover({ projectId: created.id })).id).toBe(created.id);
    expect((await neon.projects.get({ projectId: created.id })).name).toBe("sdk-renamed");
  });
});

describe("@neondatabase/api-client", () => {
  it("manages endpoints and reads operations", async () => {
    const h = await startHarness(realTime);
    const { dev } = await branchesOf(h);
    const api = createApiClient({ apiKey: h.emulator.bootstrapKey, baseURL: h.emulator.url });

    expect((await api.listProjects({ limit: 5 })).data.projects.map((p) => p.id)).toEqual([projectId]);
    const created = await api.createProjectEndpoint(projectId, {
      endpoint: { branch_id: dev!, type: EndpointType.ReadWrite },
    });
    expect(created.status).toBe(201);
    const id = created.data.endpoint.id;
    const [op] = created.data.operations;
    await expect
      .poll(async () => (await api.getProjectOperation(projectId, op!.id)).data.operation.status)
      .toBe("finished");
    expect((await api.getProjectEndpoint(projectId, id)).data.endpoint.current_state).toBe("active");
    expect((await api.listProjectEndpoints(projectId)).data.endpoints).toHaveLength(2);
    expect((await api.listProjectBranchEndpoints(projectId, dev!)).data.endpoints.map((e) => e.id)).toEqual([
      id,
    ]);
    const updated = await api.updateProjectEndpoint(projectId, id, { endpoint: { name: "api-client" } });
    expect(updated.data.endpoint.name).toBe("api-client");
    await expect
      .poll(async () => (await api.suspendProjectEndpoint(projectId, id).catch(() => undefined))?.status)
      .toBe(200);
    const page = await api.listProjectOperations({ projectId, limit: 2 });
    expect(page.data.operations).toHaveLength(2);
    const next = await api.listProjectOperations({
      projectId,
      limit: 2,
      cursor: page.data.pagination!.cursor,
    });
    expect(next.data.operations[0]!.id).not.toBe(page.data.operations[0]!.id);
    await expect
      .poll(async () => (await api.deleteProjectEndpoint(projectId, id).catch(() => undefined))?.status)
      .toBe(200);
    // Already gone: 204 with no body, as the document says.
    expect((await api.deleteProjectEndpoint(projectId, id)).status).toBe(204);

    const branch = await api.createProjectBranch(projectId, {
      branch: { parent_id: dev!, name: "api-client-branch" },
      endpoints: [{ type: EndpointType.ReadOnly }],
    });
    expect(branch.status).toBe(201);
    const branchId = branch.data.branch.id;
    await expect
      .poll(async () => (await api.getProjectBranch(projectId, branchId)).data.branch.current_state)
      .toBe("ready");
    const branches = (await api.listProjectBranches({ projectId })).data.branches;
    expect(branches.map((b) => b.name)).toContain("api-client-branch");
    const protectedBranch = await api.updateProjectBranch(projectId, branchId, {
      branch: { protected: true },
    });
    expect(protectedBranch.data.branch.protected).toBe(true);
    await api.updateProjectBranch(projectId, branchId, { branch: { protected: false } });
    await expect
      .poll(
        async () => (await api.deleteProjectBranch({ projectId, branchId }).catch(() => undefined))?.status,
      )
      .toBe(200);
    expect((await api.deleteProjectBranch({ projectId, branchId })).status).toBe(204);

    const auth = (await api.getAuthDetails()).data;
    expect(auth.auth_method).toBe("api_key_user");
    expect((await api.getCurrentUserInfo()).data.id).toBe(auth.account_id);
    expect((await api.getCurrentUserOrganizations()).data.organizations).toEqual([]);

    const key = await api.createApiKey({ key_name: "api-client" });
    expect((await api.listApiKeys()).data.map((k) => k.name)).toContain("api-client");
    expect((await api.revokeApiKey(key.data.id)).data.revoked).toBe(true);
  });

  it("manages roles and databases, restores a branch and builds connection URIs", async () => {
    const h = await startHarness(realTime);
    const { main, dev } = await branchesOf(h);
    const api = createApiClient({ apiKey: h.emulator.bootstrapKey, baseURL: h.emulator.url });
    const role = await api.createProjectBranchRole(projectId, dev!, { role: { name: "api_app" } });
    expect(role.status).toBe(201);
    expect((await api.listProjectBranchRoles(projectId, dev!)).data.roles.map((r) => r.name)).toContain(
      "api_app",
    );
    expect((await api.getProjectBranchRolePassword(projectId, dev!, "api_app")).data.password).toBe(
      role.data.role.password,
    );
    const db = await api.createProjectBranchDatabase(projectId, dev!, {
      database: { name: "api_db", owner_name: "api_app" },
    });
    expect(db.data.database.owner_name).toBe("api_app");
    expect((await api.getProjectBranchDatabase(projectId, dev!, "api_db")).data.database.id).toBe(
      db.data.database.id,
    );
    const restored = await api.restoreProjectBranch(projectId, dev!, { source_branch_id: main! });
    expect(restored.data.branch.last_reset_at).toBeDefined();
    expect((await api.listProjectBranchDatabases(projectId, dev!)).data.databases.map((d) => d.name)).toEqual(
      ["neondb"],
    );
    const uri = await api.getConnectionUri({
      projectId,
      database_name: "neondb",
      role_name: "neondb_owner",
      pooled: true,
    });
    expect(uri.data.uri).toMatch(/^postgresql:\/\/neondb_owner:npg_/);
  });
});

describe("neonctl", () => {
  /** Runs neonctl against a fresh emulator with its own config directory. */
  async function withNeonctl(test: (h: Harness, neonctl: Neonctl) => Promise<void>) {
    const h = await startHarness(realTime);
    const configDir = await mkdtemp(join(tmpdir(), "neonctl-"));
    try {
      await test(h, neonctlFor(h.emulator.url, h.emulator.bootstrapKey, configDir));
    } finally {
      await rm(configDir, { recursive: true, force: true });
    }
  }

  it("shows the user, lists projects and operations and manages API keys", () =>
    withNeonctl(async (h, neonctl) => {
      expect(await neonctl("projects", "list")).toMatchObject({ projects: [{ id: projectId }] });
      expect(await neonctl("me")).toMatchObject({ email: "user@example.com" });
      const [seeded] = (await h.api("GET", `/projects/${projectId}/endpoints`)).body.endpoints;
      await h.api("POST", `/projects/${projectId}/endpoints/${seeded.id}/start`);
      expect(await neonctl("operations", "list", "--project-id", projectId)).toEqual([
        expect.objectContaining({ action: "start_compute", endpoint_id: seeded.id }),
      ]);
      const created = (await neonctl("api-keys", "create", "--name", "cli")) as { id: number; key: string };
      expect(created.key).toMatch(/^[a-z0-9]{64}$/);
      expect(await neonctl("api-keys", "list")).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: "cli" })]),
      );
      await neonctl("api-keys", "revoke", String(created.id));
      expect((await h.api("GET", "/projects", undefined, { key: created.key })).status).toBe(401);
    }));

  it("creates, lists, reads, updates, deletes and recovers projects", () =>
    withNeonctl(async (h, neonctl) => {
      const created = (await neonctl(
        "projects",
        "create",
        "--name",
        "cli-project",
        "--region-id",
        "aws-eu-central-1",
        "--database",
        "app",
        "--role",
        "app_admin",
        "--pg-version",
        "16",
        "--cu",
        "0.5-2",
      )) as { project: { id: string }; connection_uris: { connection_uri: string }[] };
      const id = created.project.id;
      expect(created.project).toMatchObject({
        name: "cli-project",
        region_id: "aws-eu-central-1",
        pg_version: 16,
      });
      expect(new URL(created.connection_uris[0]!.connection_uri).username).toBe("app_admin");
      const listed = (await neonctl("projects", "list")) as { projects: { id: string }[] };
      expect(listed.projects.map((p) => p.id).sort()).toEqual([projectId, id].sort());
      expect(await neonctl("projects", "get", id)).toMatchObject({
        id,
        default_endpoint_settings: { autoscaling_limit_min_cu: 0.5, autoscaling_limit_max_cu: 2 },
      });
      expect(
        await neonctl("projects", "update", id, "--name", "renamed", "--block-vpc-connections"),
      ).toMatchObject({
        name: "renamed",
        settings: { block_vpc_connections: true },
      });
      await neonctl("projects", "update", id, "--enable-logical-replication", "--yes");
      expect((await h.api("GET", `/projects/${id}`)).body.project.settings.enable_logical_replication).toBe(
        true,
      );
      expect(await neonctl("projects", "delete", id)).toMatchObject({ id });
      expect((await h.api("GET", `/projects/${id}`)).status).toBe(404);
      expect(await neonctl("projects", "list", "--recoverable-only")).toEqual([
        expect.objectContaining({ id, deleted_at: expect.any(String) }),
      ]);
      expect(await neonctl("projects", "recover", id)).toMatchObject({ id, name: "renamed" });
    }));

  it("manages roles and databases, resets a branch from its parent, prints a connection string", () =>
    withNeonctl(async (h, neonctl) => {
      const p = ["--project-id", projectId];
      await neonctl("roles", "create", "--name", "cli_app", "--branch", "dev", ...p);
      expect(await neonctl("roles", "list", "--branch", "dev", ...p)).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: "cli_app" })]),
      );
      await neonctl(
        "databases",
        "create",
        "--name",
        "cli_db",
        "--owner-name",
        "cli_app",
        "--branch",
        "dev",
        ...p,
      );
      expect(await neonctl("databases", "list", "--branch", "dev", ...p)).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: "cli_db", owner_name: "cli_app" })]),
      );
      await neonctl("branches", "reset", "dev", "--parent", ...p);
      const { dev } = await branchesOf(h);
      const names = (await h.api("GET", `/projects/${projectId}/branches/${dev}/databases`)).body.databases;
      expect(names.map((d: { name: string }) => d.name)).toEqual(["neondb"]);
      const cs = await neonctl(
        "connection-string",
        "main",
        "--role-name",
        "neondb_owner",
        "--database-name",
        "neondb",
        ...p,
      );
      expect(new URL(cs as string).username).toBe("neondb_owner");
    }));
});
