import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import { branchBody } from "./branch-schemas.ts";
import type { PlatformClient } from "./client.ts";
import { UnprocessableError } from "./errors.ts";

interface SchemaNode {
  required?: string[];
  properties?: Record<string, SchemaNode & { deprecated?: boolean }>;
}

const require = createRequire(import.meta.url);
const document = parse(
  readFileSync(require.resolve("@neondatabase/api-client/public-v2-for-users.gen.yaml"), "utf8"),
) as { components: { schemas: Record<string, SchemaNode> } };
const schemas = document.components.schemas;

describe("the branch routes of the platform client", () => {
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
    expect((await client.getBranch("shop", created.branch.id)).currentState).toBe("ready");

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
});
