// The platform's operations list is eventually consistent: right after a
// request it may not show the operations the request returned. Waiting on them
// must still work, by reading what the list does not show by id.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlatformClient } from "./client.ts";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";

const LIST_OPERATIONS = "GET /projects/:project_id/operations";
const GET_OPERATION = "GET /projects/:project_id/operations/:operation_id";

describe("an operations list that lags behind", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 20,
      operationsListLagMs: 60_000,
      seed: { projects: [{ id: "shop", name: "shop", branches: [{ id: "b1", name: "b1" }] }] },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());

  it("does not show a request's operations in the list yet, while reading them by id does", async () => {
    const created = await client.createEndpoint("shop", { branchId: "b1", type: "read_only" });
    const listed = (await client.listOperationsPage("shop", { limit: 50 })).operations.map((op) => op.id);
    for (const op of created.operations) {
      expect(listed).not.toContain(op.id);
      expect((await client.getOperation("shop", op.id)).id).toBe(op.id);
    }
  });

  it("still settles waiting operations, through reads by id", async () => {
    const created = await client.createEndpoint("shop", { branchId: "b1", type: "read_only" });
    const beforeGets = await platform.served(GET_OPERATION);
    const beforeLists = await platform.served(LIST_OPERATIONS);
    const outcome = await client.waitForOperations("shop", created.operations, {
      pollIntervalMs: 25,
      timeoutMs: 5_000,
    });
    expect(outcome.state).toBe("finished");
    expect((await platform.served(GET_OPERATION)) - beforeGets).toBeGreaterThan(0);
    expect((await platform.served(LIST_OPERATIONS)) - beforeLists).toBeGreaterThan(0);
  });
});
