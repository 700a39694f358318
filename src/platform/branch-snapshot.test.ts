import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import { NotFoundError } from "./errors.ts";

const LIST_BRANCHES = "GET /projects/:project_id/branches";
const wait = { pollIntervalMs: 20, timeoutMs: 5_000 };

describe("the per-project branch snapshot", () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 50,
      seed: {
        projects: [
          { id: "shop", name: "shop", branches: [{ id: "br-dev", name: "dev" }] },
          { id: "blog", name: "blog" },
        ],
      },
    });
  });
  afterAll(() => platform.close());

  const lists = () => platform.served(LIST_BRANCHES);

  it("serves concurrent readers of one project with one list request, and does not share it between projects", async () => {
    const client = platform.client();
    const before = await lists();
    const views = await Promise.all(Array.from({ length: 30 }, () => client.branchSnapshot("shop")));
    expect((await lists()) - before).toBe(1);
    expect(new Set(views.map((v) => v.map((b) => b.id).join()))).toHaveLength(1);
    expect(views[0]!.map((b) => b.name)).toContain("dev");
    const blog = await client.branchSnapshot("blog");
    expect(blog.every((b) => b.projectId === "blog")).toBe(true);
    expect((await lists()) - before).toBe(2);
  });

  it("records a create storm without listing again, and shows each branch ready once its operations finish", async () => {
    const client = platform.client();
    await client.branchSnapshot("shop");
    const before = await lists();
    const created = [];
    for (const name of ["pr-1", "pr-2", "pr-3"]) {
      const result = await client.createBranch("shop", { name });
      expect(result.branch).toMatchObject({ name, currentState: "init", pendingState: "ready" });
      created.push(result);
      // Found by name before its operations end, from the create's answer.
      const seen = (await client.branchSnapshot("shop", { maxAgeMs: 60_000 })).find((b) => b.name === name);
      expect(seen?.id).toBe(result.branch.id);
    }
    for (const { operations } of created) {
      expect((await client.waitForOperations("shop", operations, wait)).state).toBe("finished");
    }
    const view = await client.branchSnapshot("shop", { maxAgeMs: 60_000 });
    for (const { branch } of created) {
      const seen = view.find((b) => b.id === branch.id);
      expect(seen?.currentState).toBe("ready");
      expect(seen?.pendingState).toBeUndefined();
    }
    expect((await lists()) - before).toBe(0);
    // And it is the truth: a fresh list says the same.
    const truth = await client.branchSnapshot("shop", { maxAgeMs: 0 });
    for (const { branch } of created) {
      expect(truth.find((b) => b.id === branch.id)?.currentState).toBe("ready");
    }
    expect((await lists()) - before).toBe(1);
  });

  it("keeps the branches as they are while a branch's endpoint operations finish", async () => {
    const client = platform.client();
    await client.branchSnapshot("shop");
    const before = await lists();
    const endpoint = await client.createEndpoint("shop", { branchId: "br-dev", type: "read_only" });
    expect((await client.waitForOperations("shop", endpoint.operations, wait)).state).toBe("finished");
    await client.branchSnapshot("shop", { maxAgeMs: 60_000 });
    expect((await lists()) - before).toBe(0);
  });

  it("records renames and deletions, and a 204 to a DELETE drops the branch", async () => {
    const client = platform.client();
    const { branch, operations } = await client.createBranch("shop", { name: "pr-rename" });
    await client.waitForOperations("shop", operations, wait);
    await client.branchSnapshot("shop", { maxAgeMs: 0 });
    const before = await lists();
    await client.updateBranch("shop", branch.id, { name: "pr-renamed" });
    const renamed = await client.branchSnapshot("shop", { maxAgeMs: 60_000 });
    expect(renamed.find((b) => b.id === branch.id)?.name).toBe("pr-renamed");

    const deleted = await client.deleteBranch("shop", branch.id);
    expect(deleted).toBeDefined();
    const after = await client.branchSnapshot("shop", { maxAgeMs: 60_000 });
    expect(after.map((b) => b.id)).not.toContain(branch.id);
    expect((await lists()) - before).toBe(0);

    // Another client (or replica) deleted a branch this one still lists: its own DELETE answers
    // 204, and the branch leaves its snapshot all the same.
    const other = await client.createBranch("shop", { name: "pr-elsewhere" });
    await client.waitForOperations("shop", other.operations, wait);
    await platform.client().deleteBranch("shop", other.branch.id);
    expect(await client.deleteBranch("shop", other.branch.id)).toBeUndefined();
    const gone = await client.branchSnapshot("shop", { maxAgeMs: 60_000 });
    expect(gone.map((b) => b.id)).not.toContain(other.branch.id);
    expect((await lists()) - before).toBe(0);
  });

  it("lists again after a branch mutation the platform refused", async () => {
    const client = platform.client();
    await client.branchSnapshot("shop");
    const before = await lists();
    await expect(client.createBranch("shop", { name: "orphan", parentId: "br-missing" })).rejects.toThrow(
      NotFoundError,
    );
    await client.branchSnapshot("shop", { maxAgeMs: 60_000 });
    expect((await lists()) - before).toBe(1);
  });
});
