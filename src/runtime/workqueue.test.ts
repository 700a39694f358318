import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WorkQueue, backoffDelay, duePriority, lowPriority } from "./workqueue.ts";

describe("work queue", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("hands out a key requested many times while waiting only once", async () => {
    const queue = new WorkQueue();
    for (let i = 0; i < 100; i++) queue.add("default/db");
    queue.add("default/other");
    expect(queue.depth).toBe(2);
    expect(await queue.get()).toBe("default/db");
    expect(await queue.get()).toBe("default/other");
    expect(queue.depth).toBe(0);
  });

  it("never hands out a key being reconciled; a request meanwhile runs right after it", async () => {
    const queue = new WorkQueue();
    queue.add("a");
    expect(await queue.get()).toBe("a");
    queue.add("a");
    queue.add("a");
    expect(queue.depth).toBe(0);
    let second: string | undefined;
    void queue.get().then((k) => (second = k));
    await vi.advanceTimersByTimeAsync(1000);
    expect(second).toBeUndefined();
    queue.done("a");
    await vi.advanceTimersByTimeAsync(0);
    expect(second).toBe("a");
  });

  it("keeps the earliest of two delayed requests", async () => {
    const queue = new WorkQueue();
    queue.addAfter("a", 60_000);
    queue.addAfter("a", 1_000);
    queue.addAfter("a", 30_000);
    await vi.advanceTimersByTimeAsync(999);
    expect(queue.depth).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(queue.depth).toBe(1);
    expect(await queue.get()).toBe("a");
    queue.done("a");
    await vi.advanceTimersByTimeAsync(120_000);
    expect(queue.depth).toBe(0);
  });

  it("a key due in weeks waits on a timer Node takes as given (no spin), and comes due on time", async () => {
    const queue = new WorkQueue();
    const timers = vi.spyOn(globalThis, "setTimeout");
    const thirtyDays = 30 * 86_400_000;
    queue.addAfter("branch", thirtyDays);
    // Node fires a longer timer after 1 ms: every timer the queue sets must be within its range.
    for (const call of timers.mock.calls) expect(call[1]).toBeLessThanOrEqual(2_147_483_647);
    await vi.advanceTimersByTimeAsync(thirtyDays - 1);
    expect(queue.depth).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(queue.depth).toBe(1);
    timers.mockRestore();
  });

  it("an immediate request overrides a pending delayed one", () => {
    const queue = new WorkQueue();
    queue.addAfter("a", 60_000);
    queue.add("a");
    expect(queue.depth).toBe(1);
  });

  it("a requeue requested during a reconcile is scheduled after it finishes, keeping the earliest time", async () => {
    const queue = new WorkQueue();
    queue.add("a");
    await queue.get();
    queue.addAfter("a", 5_000);
    queue.addAfter("a", 2_000);
    queue.done("a");
    await vi.advanceTimersByTimeAsync(1_999);
    expect(queue.depth).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(queue.depth).toBe(1);
  });

  it("backs off each failing key exponentially and starts over after a success", async () => {
    const queue = new WorkQueue({ baseDelayMs: 100, maxDelayMs: 1_000, random: () => 1 });
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      const before = Date.now();
      queue.addRateLimited("a");
      const got = queue.get();
      await vi.advanceTimersToNextTimerAsync();
      expect(await got).toBe("a");
      delays.push(Date.now() - before);
      queue.done("a");
    }
    expect(delays).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    queue.forget("a");
    expect(queue.failureCount("a")).toBe(0);
  });

  it("spreads backoff delays with jitter between half and the full delay", () => {
    expect(backoffDelay(3, { baseDelayMs: 10, random: () => 0 })).toBe(40);
    expect(backoffDelay(3, { baseDelayMs: 10, random: () => 0.5 })).toBe(60);
    expect(backoffDelay(40, { baseDelayMs: 10, maxDelayMs: 300_000, random: () => 0 })).toBe(150_000);
  });

  it("drain waits for reconciles in flight and hands out nothing new", async () => {
    const queue = new WorkQueue();
    queue.add("a");
    queue.add("b");
    await queue.get();
    let drained: boolean | undefined;
    void queue.drain(10_000).then((d) => (drained = d));
    expect(await queue.get()).toBeUndefined();
    queue.add("c");
    expect(queue.depth).toBe(0);
    await vi.advanceTimersByTimeAsync(100);
    expect(drained).toBeUndefined();
    queue.done("a");
    await vi.advanceTimersByTimeAsync(0);
    expect(drained).toBe(true);
  });

  it("drain gives up at its deadline when a reconcile hangs", async () => {
    const queue = new WorkQueue();
    queue.add("a");
    await queue.get();
    const drained = queue.drain(5_000);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await drained).toBe(false);
  });

  describe("priorities", () => {
    const drain = async (queue: WorkQueue, n: number): Promise<string[]> => {
      const order: string[] = [];
      for (let i = 0; i < n; i++) {
        const key = (await queue.get())!;
        order.push(key);
        queue.done(key);
      }
      return order;
    };

    it("a watch event overtakes hundreds of keys queued by the initial list", async () => {
      const queue = new WorkQueue();
      for (let i = 0; i < 300; i++) queue.add(`listed-${i}`, lowPriority);
      queue.add("changed");
      expect(await queue.get()).toBe("changed");
      expect(await queue.get()).toBe("listed-0");
      expect(queue.depth).toBe(299);
    });

    it("a poll that falls due goes before the listed keys still waiting, which keep their order", async () => {
      const queue = new WorkQueue();
      queue.addAfter("polled", 2_000);
      for (let i = 0; i < 5; i++) queue.add(`listed-${i}`, lowPriority);
      expect(await drain(queue, 2)).toEqual(["listed-0", "listed-1"]);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(await drain(queue, 4)).toEqual(["polled", "listed-2", "listed-3", "listed-4"]);
    });

    it("a requeue that falls due goes before a storm of new objects, which keep their order", async () => {
      const queue = new WorkQueue();
      queue.addAfter("turn", 2_000, duePriority);
      for (let i = 0; i < 300; i++) queue.add(`new-${i}`);
      expect(await drain(queue, 2)).toEqual(["new-0", "new-1"]);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(await drain(queue, 3)).toEqual(["turn", "new-2", "new-3"]);
    });

    it("a listed key that changes moves up, once, and a resync never moves a key down", async () => {
      const queue = new WorkQueue();
      queue.add("a", lowPriority);
      queue.add("b", lowPriority);
      queue.add("c");
      queue.add("b");
      queue.add("c", lowPriority);
      expect(queue.depth).toBe(3);
      expect(await drain(queue, 3)).toEqual(["c", "b", "a"]);
    });

    it("keeps one entry per key and the dirty re-run, at the higher of the priorities asked for", async () => {
      const queue = new WorkQueue();
      queue.add("a", lowPriority);
      expect(await queue.get()).toBe("a");
      queue.add("a", lowPriority);
      queue.add("a");
      queue.add("b", lowPriority);
      queue.done("a");
      expect(queue.depth).toBe(2);
      expect(await drain(queue, 2)).toEqual(["a", "b"]);
    });

    it("an earlier resync replaces a later poll, and runs at its own low priority", async () => {
      const queue = new WorkQueue();
      queue.addAfter("polled", 60_000);
      queue.add("changed");
      queue.add("polled", lowPriority);
      queue.add("other", lowPriority);
      expect(await drain(queue, 3)).toEqual(["changed", "polled", "other"]);
      await vi.advanceTimersByTimeAsync(120_000);
      expect(queue.depth).toBe(0);
    });
  });
});
