// The operator reads a project's whole branch list when the platform answers it in pages: it
// follows `pagination.next` (a page may hold fewer than asked), oldest first, so a branch renamed
// between two pages is neither lost nor read twice.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import type { PlatformClient } from "./client.ts";

const listRoute = "GET /projects/:project_id/branches";

describe("the branch list, read page by page", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    // Pages of at most two branches, whatever the client asks for.
    platform = await startPlatform({
      operationDurationMs: 20,
      branchPageMax: 2,
      seed: {
        projects: [
          {
            id: "shop",
            name: "shop",
            branches: [1, 2, 3, 4].map((i) => ({ id: `br-${i}`, name: `feature-${i}` })),
          },
        ],
      },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());

  it("returns every branch, one request per page", async () => {
    const before = await platform.served(listRoute);
    const branches = await client.listBranches("shop");
    // The primary branch and the four seeded ones: three pages of two, two and one.
    expect(branches.map((b) => b.name).sort()).toEqual([
      "feature-1",
      "feature-2",
      "feature-3",
      "feature-4",
      "main",
    ]);
    expect((await platform.served(listRoute)) - before).toBe(3);
  });

  it("reads in creation order, so a branch changed since keeps its place (the default order is by change)", async () => {
    const [first, second] = await client.listBranches("shop");
    await client.updateBranch("shop", second!.id, { name: "renamed" });
    const after = await client.listBranches("shop");
    expect(after).toHaveLength(5);
    expect(after.map((b) => b.id).slice(0, 2)).toEqual([first!.id, second!.id]);
    expect(after.find((b) => b.id === second!.id)?.name).toBe("renamed");
  });

  it("the shared snapshot sees every page too", async () => {
    const snapshot = await client.branchSnapshot("shop", { maxAgeMs: 0 });
    expect(snapshot).toHaveLength(5);
  });
});
