// The project routes of the platform client against the emulator over HTTP: what the client
// requires of an answer is what the official document requires, the bodies it sends are the
// document's, and each route does what the Project kind relies on.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import type { PlatformClient } from "./client.ts";
import { BadRequestError, LockedError, NotFoundError, ProjectBusyError } from "./errors.ts";
import { projectBody } from "./project-schemas.ts";

interface SchemaNode {
  required?: string[];
  properties?: Record<string, SchemaNode>;
}

const require = createRequire(import.meta.url);
const document = parse(
  readFileSync(require.resolve("@neondatabase/api-client/public-v2-for-users.gen.yaml"), "utf8"),
) as { components: { schemas: Record<string, SchemaNode> } };
const schemas = document.components.schemas;

/** Every setting the client can send, once. */
const everything = {
  name: "tenant-acme",
  regionId: "aws-us-east-2",
  pgVersion: 16,
  historyRetentionSeconds: 3_600,
  branch: { name: "trunk", roleName: "acme", databaseName: "acme", annotations: { owner: "me" } },
  defaultEndpointSettings: {
    autoscalingLimitMinCu: 0.5,
    autoscalingLimitMaxCu: 2,
    suspendTimeoutSeconds: 600,
    pgSettings: { work_mem: "8MB" },
  },
  settings: {
    allowedIps: { ips: ["10.0.0.0/8", "192.168.1.1"], protectedBranchesOnly: false },
    enableLogicalReplication: false,
    maintenanceWindow: { weekdays: [6, 7], startTime: "01:00", endTime: "02:00" },
    blockPublicConnections: false,
    blockVpcConnections: false,
    quota: { activeTimeSeconds: 36_000, logicalSizeBytes: 1_000_000_000 },
  },
};

describe("the project routes of the platform client", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      // Long enough that a change sent right after a create meets its operations still running, under load too.
      operationDurationMs: 500,
      seed: {
        limits: { plan: "launch", max_projects: 1_000, max_history_retention_seconds: 21_600 },
        projects: Array.from({ length: 401 }, (_, i) => ({
          id: `tenant-${String(i).padStart(3, "0")}`,
          name: `tenant ${i}`,
          branches: [],
        })),
      },
    });
    client = platform.client({ pollIntervalMs: 50 });
  });
  afterAll(() => platform.close());

  it("requires of a project only what the document requires of both a project and a list item", () => {
    const required = ["id", "name", "region_id", "pg_version", "proxy_host", "store_passwords"];
    for (const schema of ["Project", "ProjectListItem"]) {
      for (const field of [...required, "created_at", "updated_at"])
        expect(schemas[schema]?.required, `${schema}.${field}`).toContain(field);
    }
    // The bodies use only the document's create and update fields.
    const create = schemas["ProjectCreateRequest"]!.properties!["project"]!.properties!;
    const update = schemas["ProjectUpdateRequest"]!.properties!["project"]!.properties!;
    const body = projectBody({ ...everything, orgId: "org-x" }).project;
    for (const field of Object.keys(body)) expect(create).toHaveProperty(field);
    const branch = schemas["ProjectCreateRequest"]!.properties!["project"]!.properties!["branch"]!;
    for (const field of Object.keys(body["branch"] as object))
      expect(branch.properties).toHaveProperty(field);
    const settings = schemas["ProjectSettingsData"]!.properties!;
    for (const field of Object.keys(body["settings"] as object)) expect(settings).toHaveProperty(field);
    const { name, historyRetentionSeconds, defaultEndpointSettings, settings: s } = everything;
    const patch = projectBody({
      name,
      historyRetentionSeconds,
      defaultEndpointSettings,
      settings: s,
    }).project;
    for (const field of Object.keys(patch)) expect(update).toHaveProperty(field);
  });

  it("creates a project with every setting, its default branch and endpoint, and the operations they wait for", async () => {
    const created = await client.createProject(everything);
    const { project } = created;
    expect(project).toMatchObject({
      name: "tenant-acme",
      regionId: "aws-us-east-2",
      pgVersion: 16,
      historyRetentionSeconds: 3_600,
      defaultEndpointSettings: everything.defaultEndpointSettings,
    });
    expect(project.settings).toMatchObject({
      ...everything.settings,
      quota: expect.objectContaining(everything.settings.quota) as unknown,
    });
    expect(created.branch).toMatchObject({ name: "trunk", default: true, projectId: project.id });
    expect(created.endpoints).toHaveLength(1);
    expect(created.endpoints[0]).toMatchObject({ type: "read_write", branchId: created.branch.id });
    expect(created.operations.map((op) => op.action)).toEqual(["create_timeline", "start_compute"]);
    // Nothing of the answer holds a password.
    expect(JSON.stringify(created)).not.toMatch(/"password"|postgres(ql)?:\/\//);
    // The default branch carries the annotations it was given.
    const branches = await client.listBranches(project.id);
    expect(branches.find((b) => b.default)?.annotations).toEqual({ owner: "me" });
    expect(await client.getProject(project.id)).toEqual(project);
  });

  it("changes only what the patch names; a project with running operations is the project's turn", async () => {
    const { project, operations } = await client.createProject({ name: "tenant-patch" });
    // Its creation's operations still run: the change waits for them (423 from the platform, or the
    // client's own gate holding it back).
    await expect(client.updateProject(project.id, { historyRetentionSeconds: 7_200 })).rejects.toSatisfy(
      (err) => err instanceof LockedError || err instanceof ProjectBusyError,
    );
    await client.waitForOperations(project.id, operations, { timeoutMs: 10_000 });
    const changed = await client.updateProject(project.id, {
      historyRetentionSeconds: 7_200,
      settings: { allowedIps: { ips: ["10.1.0.0/16"] } },
    });
    expect(changed.project.historyRetentionSeconds).toBe(7_200);
    expect(changed.project.settings.allowedIps?.ips).toEqual(["10.1.0.0/16"]);
    expect(changed.project.name).toBe("tenant-patch");
    expect(changed.operations.map((op) => op.action)).toEqual(["apply_storage_config"]);
  });

  it("says which limit a retention above the plan's breaks (400)", async () => {
    const refused = client.createProject({ name: "too-long", historyRetentionSeconds: 2_592_000 });
    await expect(refused).rejects.toBeInstanceOf(BadRequestError);
    await expect(refused).rejects.toThrow(/max:"21600"/);
  });

  it("finds projects by name across pages of 400, and tells one it cannot see from none", async () => {
    const all = await client.listProjects({ search: "tenant " });
    expect(all).toHaveLength(401);
    expect(new Set(all.map((p) => p.id)).size).toBe(401);
    expect((await client.listProjects({ search: "tenant-acme" })).map((p) => p.name)).toEqual([
      "tenant-acme",
    ]);
    await expect(client.getProject("no-such-project")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("a new project's first look and its owner's connection URI cost no request: its create answered them", async () => {
    const created = await client.createProject({
      name: "tenant-quiet",
      branch: { roleName: "quiet_owner", databaseName: "quiet" },
    });
    const { project, branch } = created;
    const endpointId = created.endpoints[0]?.id;
    const query = { branchId: branch.id, endpointId, roleName: "quiet_owner", databaseName: "quiet" };
    const reads = async () =>
      (await platform.served("GET /projects/:project_id")) +
      (await platform.served("GET /projects/:project_id/connection_uri"));
    const before = await reads();
    expect(await client.projectSnapshot(project.id, { maxAgeMs: 60_000 })).toEqual(project);
    const uri = await client.connectionUri(project.id, query);
    expect(new URL(uri)).toMatchObject({ username: "quiet_owner", pathname: "/quiet" });
    expect(await reads()).toBe(before);
    // Held for one read only: the next asks the platform, and gets the same password.
    expect(await client.connectionUri(project.id, query)).toBe(uri);
    expect(await reads()).toBe(before + 1);
    // A look that accepts no age reads the project again.
    await client.projectSnapshot(project.id, { maxAgeMs: 0 });
    expect(await reads()).toBe(before + 2);
  });

  it("deletes a project and everything in it", async () => {
    const { project, operations } = await client.createProject({ name: "tenant-gone" });
    await client.waitForOperations(project.id, operations, { timeoutMs: 10_000 });
    const deleted = await client.deleteProject(project.id);
    expect(deleted.project.id).toBe(project.id);
    expect(deleted.operations).toEqual([]);
    await expect(client.getProject(project.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.listEndpoints(project.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});
