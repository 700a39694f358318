import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import { databaseBody, restoreBody, roleBody } from "./branch-content-schemas.ts";
import { branchBody, branchEndpointOptions } from "./branch-schemas.ts";
import type { PlatformClient } from "./client.ts";
import { BadRequestError, NotFoundError, UnprocessableError } from "./errors.ts";
import type { Operation } from "./schemas.ts";

interface SchemaNode {
  required?: string[];
  properties?: Record<string, SchemaNode & { deprecated?: boolean }>;
}

const require = createRequire(import.meta.url);
const document = parse(
  readFileSync(require.resolve("@neondatabase/api-client/public-v2-for-users.gen.yaml"), "utf8"),
) as { components: { schemas: Record<string, SchemaNode> } };
const schemas = document.components.schemas;

describe("the branch routes of the platform client (branches, their roles, databases and restore)", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 50,
      seed: { projects: [{ id: "shop", name: "shop", branches: [{ id: "br-dev", name: "dev" }] }] },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());

  const branch = async (id: string) => (await client.listBranches("shop")).find((b) => b.id === id);

  it("requires of a branch only what the official document requires", () => {
    // A field required here but optional there would make the client refuse a valid answer.
    const documented = schemas["Branch"]!;
    const branch = {
      id: "br-a",
      project_id: "p",
      name: "n",
      current_state: "ready",
      state_changed_at: "2026-01-01T00:00:00Z",
      default: false,
      protected: false,
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
    };
    for (const field of Object.keys(branch)) expect(documented.required).toContain(field);
    expect(documented.properties?.["expires_at"]).toBeDefined();
    // The bodies the client sends use only the document's create and update fields.
    const create = schemas["BranchCreateRequest"]!.properties!["branch"]!.properties!;
    const update = schemas["BranchUpdateRequest"]!.properties!["branch"]!.properties!;
    const full = { parentId: "br-x", name: "n", protected: true, expiresAt: "2030-01-01T00:00:00Z" };
    for (const field of Object.keys(branchBody(full).branch)) expect(create).toHaveProperty(field);
    for (const field of Object.keys(branchBody({ name: "n", protected: false, expiresAt: null }).branch))
      expect(update).toHaveProperty(field);
    // An endpoint created with the branch: exactly the fields `BranchCreateRequestEndpointOptions` has.
    const options = schemas["BranchCreateRequestEndpointOptions"]!.properties!;
    const endpoint = branchEndpointOptions({
      branchId: "br-x",
      name: "k8s-name",
      type: "read_write",
      autoscalingLimitMinCu: 0.25,
      autoscalingLimitMaxCu: 1,
      suspendTimeoutSeconds: 300,
      poolerEnabled: true,
      disabled: false,
      provisioner: "k8s-neonvm",
      pgSettings: { work_mem: "4MB" },
    });
    const sent = branchBody({ ...full, endpoints: [endpoint] }).endpoints ?? [];
    expect(Object.keys(sent[0] ?? {}).sort()).toEqual(Object.keys(options).sort());
  });

  it("creates a branch from a parent, waits for its operation, changes and deletes it", async () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z");
    const created = await client.createBranch(
      "shop",
      { parentId: "br-dev", name: "preview-1", expiresAt },
      { ticket: "test/preview-1" },
    );
    expect(created.branch).toMatchObject({
      projectId: "shop",
      parentId: "br-dev",
      name: "preview-1",
      currentState: "init",
      pendingState: "ready",
      protected: false,
      default: false,
      expiresAt,
    });
    expect(created.operations.map((op) => op.action)).toEqual(["create_branch"]);
    expect(created.endpoints).toEqual([]);

    const outcome = await client.waitForOperations("shop", created.operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    expect(outcome.state).toBe("finished");
    expect((await branch(created.branch.id))?.currentState).toBe("ready");

    const renamed = await client.updateBranch("shop", created.branch.id, {
      name: "preview-1b",
      protected: true,
      expiresAt: null,
    });
    expect(renamed.branch).toMatchObject({ name: "preview-1b", protected: true });
    expect(renamed.branch.expiresAt).toBeUndefined();
    expect(renamed.operations).toEqual([]);

    const listed = await client.listBranches("shop");
    expect(listed.map((b) => b.name).sort()).toEqual(["dev", "main", "preview-1b"].sort());

    // A protected branch is refused; unprotected, it goes with its operation.
    await expect(client.deleteBranch("shop", created.branch.id)).rejects.toBeInstanceOf(UnprocessableError);
    await client.updateBranch("shop", created.branch.id, { protected: false });
    const deleted = await client.deleteBranch("shop", created.branch.id);
    expect(deleted?.operations.map((op) => op.action)).toEqual(["delete_timeline"]);
    // Gone already: 204, and the deletion is done all the same.
    expect(await client.deleteBranch("shop", created.branch.id)).toBeUndefined();
    expect((await client.listBranches("shop")).map((b) => b.id)).not.toContain(created.branch.id);
  });

  // Roles, databases and restore: bodies of the document, no password kept, a reset from the
  // parent brings back the parent's catalog.
  const settle = async (operations: Operation[]) => {
    const outcome = await client.waitForOperations("shop", operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    expect(outcome.state).toBe("finished");
  };

  it("sends only the document's request fields, with everything it requires", () => {
    const role = schemas["RoleCreateRequest"]!.properties!["role"]!;
    const database = schemas["DatabaseCreateRequest"]!.properties!["database"]!;
    const restore = schemas["BranchRestoreRequest"]!;
    const cases: [SchemaNode, Record<string, unknown>][] = [
      [role, roleBody("app").role],
      [database, databaseBody({ name: "shop", ownerName: "app" }).database],
      [restore, restoreBody({ sourceBranchId: "br-main", preserveUnderName: "old" })],
    ];
    for (const [schema, body] of cases) {
      for (const field of Object.keys(body)) expect(schema.properties).toHaveProperty(field);
      for (const field of schema.required ?? []) expect(body).toHaveProperty(field);
    }
  });

  it("creates a role and a database it owns; the role's password is not kept", async () => {
    const created = await client.createRole("shop", "br-dev", "app", { ticket: "test/app" });
    expect(created.role).toMatchObject({ branchId: "br-dev", name: "app" });
    // The platform answers the new password; the client drops it.
    expect(JSON.stringify(created)).not.toContain("password");
    expect(JSON.stringify(created)).not.toMatch(/npg_/);
    await settle(created.operations);
    const roles = await client.listRoles("shop", "br-dev");
    expect(roles.map((r) => r.name)).toEqual(expect.arrayContaining(["neondb_owner", "app"]));

    const db = await client.createDatabase("shop", "br-dev", { name: "orders", ownerName: "app" });
    expect(db.database).toMatchObject({ name: "orders", ownerName: "app", branchId: "br-dev" });
    await settle(db.operations);
    const databases = await client.listDatabases("shop", "br-dev");
    expect(databases.map((d) => [d.name, d.ownerName])).toContainEqual(["orders", "app"]);
  });

  it("resets a child from its parent: what was added on the child is gone", async () => {
    const child = await client.createBranch("shop", { parentId: "br-dev", name: "child" });
    await settle(child.operations);
    const id = child.branch.id;
    await settle((await client.createRole("shop", id, "scratch")).operations);
    await settle(
      (await client.createDatabase("shop", id, { name: "scratch", ownerName: "scratch" })).operations,
    );

    const restored = await client.restoreBranch("shop", id, { sourceBranchId: "br-dev" });
    expect(restored.branch.id).toBe(id);
    expect(restored.operations.length).toBeGreaterThan(0);
    await settle(restored.operations);
    expect((await client.listRoles("shop", id)).map((r) => r.name)).not.toContain("scratch");
    expect((await client.listDatabases("shop", id)).map((d) => d.name)).not.toContain("scratch");
    // The parent's own catalog is the child's again.
    expect((await client.listDatabases("shop", id)).map((d) => d.name)).toContain("orders");
    expect((await branch(id))?.lastResetAt).toBeDefined();
  });

  it("is refused from a source that does not exist, and for a branch with children unless their old state is kept", async () => {
    await expect(
      client.restoreBranch("shop", "br-dev", { sourceBranchId: "br-main-missing" }),
    ).rejects.toBeInstanceOf(NotFoundError);
    const main = (await client.listBranches("shop")).find((b) => b.default);
    await expect(client.restoreBranch("shop", "br-dev", { sourceBranchId: main!.id })).rejects.toBeInstanceOf(
      BadRequestError,
    );
  });
});
