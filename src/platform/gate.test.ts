import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockedError, ProjectBusyError } from "./errors.ts";
import { asAController, startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";

const CREATE = "POST /projects/:project_id/endpoints";

const branches = ["b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"];

describe("the per-project mutation gate, against a project-wide lock", () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startPlatform({
      lockScope: "project",
      operationDurationMs: 300,
      seed: {
        projects: ["shop", "blog", "wiki"].map((id) => ({
          id,
          name: id,
          // Branch ids are unique across the account.
          branches: branches.map((b) => ({ id: `${id}-${b}`, name: b })),
        })),
      },
    });
  });
  afterAll(() => platform.close());

  const locked = async () => (await platform.requests(1_000)).filter((r) => r.status === 423).length;

  it("sends the creates of one project one at a time, and none of them meets a 423", async () => {
    const client = platform.client();
    const before = await locked();
    const created = await Promise.all(
      branches
        .slice(0, 4)
        .map((branchId) =>
          client.createEndpoint("shop", { branchId: `shop-${branchId}`, type: "read_write" }),
        ),
    );
    expect(new Set(created.map((c) => c.endpoint.id)).size).toBe(4);
    expect((await locked()) - before).toBe(0);
  });

  it("without the gate, the same creates run into the lock", async () => {
    const client = platform.client({ mutationGate: false });
    const results = await Promise.allSettled(
      branches
        .slice(0, 4)
        .map((branchId) =>
          client.createEndpoint("blog", { branchId: `blog-${branchId}`, type: "read_write" }),
        ),
    );
    const refused = results.filter((r) => r.status === "rejected").map((r) => r.reason as unknown);
    expect(refused.length).toBeGreaterThan(0);
    for (const reason of refused) expect(reason).toBeInstanceOf(LockedError);
  });

  it("hands a resource's change back with the time its turn comes, later for those further back in line", async () => {
    const client = platform.client();
    const first = await client.createEndpoint(
      "wiki",
      { branchId: "wiki-b1", type: "read_write" },
      { ticket: "ns/a" },
    );
    const sent = await platform.served(CREATE);
    const second = await client
      .createEndpoint("wiki", { branchId: "wiki-b2", type: "read_write" }, { ticket: "ns/b" })
      .catch((e: unknown) => e);
    const third = await client
      .createEndpoint("wiki", { branchId: "wiki-b3", type: "read_write" }, { ticket: "ns/c" })
      .catch((e: unknown) => e);
    // Held back by the client: nothing was sent while the first create's operation runs.
    expect(await platform.served(CREATE)).toBe(sent);
    expect(second).toBeInstanceOf(ProjectBusyError);
    expect(third).toBeInstanceOf(ProjectBusyError);
    const secondAfter = (second as ProjectBusyError).retryAfterMs!;
    const thirdAfter = (third as ProjectBusyError).retryAfterMs!;
    expect(secondAfter).toBeGreaterThan(0);
    expect(thirdAfter).toBeGreaterThan(secondAfter);
    expect((second as ProjectBusyError).message).toMatch(/project wiki has operations running/);
    await client.waitForOperations("wiki", first.operations, { pollIntervalMs: 50, timeoutMs: 5_000 });
  });

  it("a 423 from another actor's change is tried again a little later, without an error", async () => {
    const other = platform.client({ mutationGate: false });
    const client = platform.client();
    const foreign = await other.createEndpoint("wiki", { branchId: "wiki-b4", type: "read_write" });
    const before = await locked();
    // The project was free as far as this client knew: it meets the lock, is told to come back a
    // probe step later, and sends again once the other change's operation (300 ms) has ended.
    const created = await asAController(() =>
      client.createEndpoint("wiki", { branchId: "wiki-b5", type: "read_write" }, { ticket: "ns/d" }),
    );
    expect(created.endpoint.branchId).toBe("wiki-b5");
    expect((await locked()) - before).toBeGreaterThan(0);
    await other.waitForOperations("wiki", foreign.operations, { pollIntervalMs: 50, timeoutMs: 5_000 });
  });

  it("hands a lasting 423 back as a wait, with the 423 as its status", async () => {
    const client = platform.client();
    await platform.setFaults({
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", status: 423 }],
    });
    try {
      const held = await client
        .createEndpoint("wiki", { branchId: "wiki-b6", type: "read_write" }, { ticket: "ns/f" })
        .catch((e: unknown) => e);
      expect(held).toBeInstanceOf(ProjectBusyError);
      expect(held).toMatchObject({ status: 423 });
      expect((held as ProjectBusyError).retryAfterMs).toBeGreaterThan(0);
    } finally {
      await platform.setFaults({});
    }
  });

  it("holds the project while a list shows another actor's operations running, so it meets no 423", async () => {
    const other = platform.client({ mutationGate: false });
    const client = platform.client();
    const mine = await client.createEndpoint("shop", { branchId: "shop-b5", type: "read_write" });
    await client.waitForOperations("shop", mine.operations, { pollIntervalMs: 50, timeoutMs: 5_000 });
    const foreign = await other.createEndpoint("shop", { branchId: "shop-b6", type: "read_write" });
    // This client's look at its own (finished) operation lists the project and sees the foreign one.
    await client
      .project("shop")
      .operations.refresh([mine.operations[0]!.id], { pollIntervalMs: 1, source: client });
    const before = await locked();
    const created = await asAController(() =>
      client.createEndpoint("shop", { branchId: "shop-b7", type: "read_write" }, { ticket: "ns/e" }),
    );
    expect(created.endpoint.branchId).toBe("shop-b7");
    expect((await locked()) - before).toBe(0);
    const [theirs] = await other
      .project("shop")
      .operations.refresh([foreign.operations[0]!.id], { source: other });
    // It was sent after the foreign operation ended.
    expect(Date.parse(created.operations[0]!.createdAt)).toBeGreaterThanOrEqual(
      Date.parse(theirs!.updatedAt),
    );
  });
});
