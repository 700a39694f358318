// The official clients work against the emulator unchanged: the SDK
// (@neon/sdk), the older @neondatabase/api-client, and the neonctl CLI.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { createNeonClient } from "@neon/sdk";
import { EndpointType, createApiClient } from "@neondatabase/api-client";
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness } from "../../test/emulator/harness.ts";
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
});

describe("neonctl", () => {
  const require = createRequire(import.meta.url);
  const cli = join(dirname(require.resolve("neonctl/package.json")), "bin", "cli.js");

  it("shows the user, lists projects and operations and manages API keys", async () => {
    const h = await startHarness(realTime);
    const configDir = await mkdtemp(join(tmpdir(), "neonctl-"));
    try {
      const neonctl = async (...args: string[]) => {
        const { stdout } = await promisify(execFile)(process.execPath, [
          cli,
          ...args,
          "--api-host",
          h.emulator.url,
          "--api-key",
          h.emulator.bootstrapKey,
          "--no-analytics",
          "--config-dir",
          configDir,
          "--output",
          "json",
        ]);
        return JSON.parse(stdout) as unknown;
      };
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
    } finally {
      await rm(configDir, { recursive: true, force: true });
    }
  });
});
