// The per-operation polling strategy exists for side-by-side benchmarks against the way the
// platform's existing clients poll: it must really cost one GET per pending operation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Operation } from "./schemas.ts";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";

const LIST_OPERATIONS = "GET /projects/:project_id/operations";
const GET_OPERATION = "GET /projects/:project_id/operations/:operation_id";
const branches = ["b1", "b2", "b3"];

describe("operation polling strategies", () => {
  let platform: TestPlatform;
  const held: Operation[] = [];

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 50,
      seed: { projects: [{ id: "shop", name: "shop", branches: branches.map((id) => ({ id, name: id })) }] },
    });
    const client = platform.client();
    for (const branchId of branches) {
      const { operations } = await client.createEndpoint("shop", { branchId, type: "read_write" });
      held.push(...operations);
      await client.waitForOperations("shop", operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
    }
  });
  afterAll(() => platform.close());

  async function served() {
    return { list: await platform.served(LIST_OPERATIONS), get: await platform.served(GET_OPERATION) };
  }

  it("per-operation reads each pending operation by id and never lists", async () => {
    const client = platform.client({ operationPolling: "per-operation" });
    const before = await served();
    const outcome = await client.waitForOperations("shop", held);
    expect(outcome.state).toBe("finished");
    expect(outcome.operations.map((op) => op.id)).toEqual(held.map((op) => op.id));
    const after = await served();
    expect(after.get - before.get).toBe(held.length);
    expect(after.list - before.list).toBe(0);
  });

  it("batched (the default) settles the same operations with one list request", async () => {
    const client = platform.client();
    const before = await served();
    const outcome = await client.waitForOperations("shop", held);
    expect(outcome.state).toBe("finished");
    const after = await served();
    expect(after.list - before.list).toBe(1);
    expect(after.get - before.get).toBe(0);
  });
});
