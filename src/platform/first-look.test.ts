// A resource looks first when its change's operations usually finish. A pass earlier in the same
// poll tick that saw them running must not answer that look: it would cost a whole poll interval.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createManualClock } from "../../tools/emulator/clock.ts";
import type { PlatformClient } from "./client.ts";
import { OperationsTracker } from "./operations.ts";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";

const LIST_OPERATIONS = "GET /projects/:project_id/operations";

describe("the first look after a change", () => {
  // Emulated time, aligned to a 5 s poll tick so every look below falls inside one tick.
  const clock = createManualClock(Date.UTC(2026, 10, 21, 10, 0, 0));
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      clock,
      operationDurationMs: 2_000,
      seed: {
        projects: [
          {
            id: "shop",
            name: "shop",
            branches: [
              { id: "b1", name: "b1" },
              { id: "b2", name: "b2" },
            ],
          },
        ],
      },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());

  it("looks again once the operations are due, even inside the tick of the pass that saw them running", async () => {
    const tracker = new OperationsTracker("shop", {
      now: () => clock.now(),
      endedBy: (ops) => ops.length * 2_000,
    });
    const { operations } = await client.createEndpoint("shop", { branchId: "b1", type: "read_write" });
    const before = await platform.served(LIST_OPERATIONS);

    // Long before it is due (the resource woken by its own status write): answered as it was
    // known, no list.
    clock.advance(100);
    expect((await tracker.refresh(operations, { pollIntervalMs: 5_000, source: client }))[0]!.status).toBe(
      "running",
    );
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(0);
    // A look by id (the mutation gate's confirmation knows only ids) lists, and sees it running.
    const early = await tracker.refresh([operations[0]!.id], { pollIntervalMs: 5_000, source: client });
    expect(early[0]!.status).toBe("running");

    // Not yet due: the pass still answers.
    clock.advance(1_000);
    expect((await tracker.refresh(early, { pollIntervalMs: 5_000, source: client }))[0]!.status).toBe(
      "running",
    );
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(1);

    // Due (created + 2 s), same tick: a new pass, which sees it finished.
    clock.advance(1_500);
    expect((await tracker.refresh(early, { pollIntervalMs: 5_000, source: client }))[0]!.status).toBe(
      "finished",
    );
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(2);
  });
});
