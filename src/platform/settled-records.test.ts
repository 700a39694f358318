// What the tracker reports of operations a caller already holds as settled: a resource's status
// gives back ids, actions and statuses only, and the project's lists settle the objects an outcome
// names (project.ts), so a settled operation is reported as the tracker's list recorded it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import { OperationsTracker, waitForOperations } from "./operations.ts";
import type { Operation } from "./schemas.ts";

describe("operations a caller holds as settled", () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 100,
      seed: { projects: [{ id: "shop", name: "shop", branches: [{ id: "br-main", name: "main" }] }] },
    });
  });
  afterAll(() => platform.close());

  it("a branch made with its endpoint whose chain ended over two looks: the outcome names the branch of each", async () => {
    const client = platform.client();
    const created = await client.createBranch("shop", { name: "chain", endpoints: [{ type: "read_write" }] });
    expect(created.operations.map((op) => op.action)).toEqual(["create_branch", "start_compute"]);
    await client.waitForOperations("shop", created.operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
    // As a resource's status gives them back: the first seen finished at the last look, the
    // second still running then.
    const bare = (op: Operation, status: Operation["status"]): Operation => ({
      ...op,
      status,
      branchId: undefined,
      endpointId: undefined,
    });
    const [first, second] = created.operations as [Operation, Operation];
    const outcome = await waitForOperations(
      new OperationsTracker("shop"),
      [bare(first, "finished"), bare(second, "running")],
      { pollIntervalMs: 20, source: client },
    );
    expect(outcome.state).toBe("finished");
    expect(outcome.operations.map((op) => [op.action, op.branchId])).toEqual([
      ["create_branch", created.branch.id],
      ["start_compute", created.branch.id],
    ]);
  });
});
