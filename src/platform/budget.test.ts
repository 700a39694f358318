import { describe, expect, it } from "vitest";
import { RateBudget, accountShare } from "./budget.ts";
import { RateLimitedError } from "./errors.ts";

/** Largest number of grants that fall into any window of `windowMs`. */
function busiestWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let start = 0, end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= windowMs) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

describe("the account's rate budget", () => {
  it("never lets a route exceed its burst per second, however many requests queue up", async () => {
    const budget = new RateBudget({ perMinute: 100_000, burstPerSecondPerRoute: 10, accountBurst: 100 });
    const granted: number[] = [];
    await Promise.all(
      Array.from({ length: 25 }, () =>
        budget
          .acquire("/projects/{project_id}/endpoints", "read")
          .then(() => granted.push(performance.now())),
      ),
    );
    expect(granted).toHaveLength(25);
    expect(busiestWindow(granted, 1_000)).toBeLessThanOrEqual(10);
  });

  it("with the platform's limits, lets a quarter of the minute go at once (each route at its burst), then paces the rest", async () => {
    const budget = new RateBudget();
    // 175 mutations over five routes (35 each, within a route's 40 a second): none waits.
    const waits = await Promise.all(
      Array.from({ length: 175 }, (_, i) => budget.acquire(`/route-${i % 5}`, "mutation")),
    );
    expect(Math.max(...waits)).toBeLessThan(50);
    // The next waits for the even pace (700 a minute: about 86 ms a request).
    const next = budget.acquire("/route-5", "mutation");
    expect(budget.waiting).toBe(1);
    expect(await next).toBeGreaterThan(40);
  });

  it("lets other routes through while one route waits for its burst", async () => {
    const budget = new RateBudget({ perMinute: 100_000, burstPerSecondPerRoute: 2, accountBurst: 100 });
    const order: string[] = [];
    const busy = Array.from({ length: 4 }, () =>
      budget.acquire("/projects/{project_id}/operations", "read").then(() => order.push("operations")),
    );
    const other = budget
      .acquire("/projects/{project_id}/endpoints", "read")
      .then(() => order.push("endpoints"));
    await Promise.all([...busy, other]);
    expect(order.indexOf("endpoints")).toBeLessThan(order.lastIndexOf("operations"));
  });

  it("sends a queued mutation before reads that were queued earlier", async () => {
    const budget = new RateBudget({ perMinute: 1_200, burstPerSecondPerRoute: 100, accountBurst: 1 });
    const order: string[] = [];
    const reads = Array.from({ length: 5 }, (_, i) =>
      budget.acquire("/projects/{project_id}/operations", "read").then(() => order.push(`read ${i}`)),
    );
    const mutation = budget
      .acquire("/projects/{project_id}/endpoints", "mutation")
      .then(() => order.push("mutation"));
    await Promise.all([...reads, mutation]);
    // The first read took the only token at once; the mutation is next, ahead of the other reads.
    expect(order.slice(0, 2)).toEqual(["read 0", "mutation"]);
  });

  it("lets a read that waited past readMaxDelayMs go before mutations queued ahead of it", async () => {
    const budget = new RateBudget({
      perMinute: 1_200,
      burstPerSecondPerRoute: 100,
      accountBurst: 1,
      readMaxDelayMs: 100,
    });
    await budget.acquire("/projects/{project_id}/endpoints", "mutation");
    const order: string[] = [];
    const read = budget.acquire("/projects/{project_id}/operations", "read").then(() => order.push("read"));
    const mutations = Array.from({ length: 10 }, (_, i) =>
      budget.acquire("/projects/{project_id}/endpoints", "mutation").then(() => order.push(`mutation ${i}`)),
    );
    await Promise.all([read, ...mutations]);
    // One token every 50 ms: mutations first, until the read has waited 100 ms.
    const at = order.indexOf("read");
    expect(at).toBeGreaterThan(0);
    expect(at).toBeLessThan(5);
  });

  it("keeps a share of the minute for mutations when polling has used the rest", async () => {
    const budget = new RateBudget({
      perMinute: 10,
      burstPerSecondPerRoute: 100,
      accountBurst: 10,
      reservedForMutations: 0.2,
      maxWaitMs: 50,
    });
    for (let i = 0; i < 8; i++) await budget.acquire("/projects/{project_id}/operations", "read");
    await expect(budget.acquire("/projects/{project_id}/operations", "read")).rejects.toBeInstanceOf(
      RateLimitedError,
    );
    await expect(budget.acquire("/projects/{project_id}/endpoints", "mutation")).resolves.toBe(0);
  });

  it("reports how long a request waited, and gives up on an aborted wait", async () => {
    const budget = new RateBudget({ perMinute: 600, burstPerSecondPerRoute: 100, accountBurst: 1 });
    expect(await budget.acquire("/api_keys", "read")).toBe(0);
    const waited = await budget.acquire("/api_keys", "read");
    expect(waited).toBeGreaterThan(0);
    const controller = new AbortController();
    const pending = budget.acquire("/api_keys", "read", controller.signal);
    controller.abort(new Error("reconcile cancelled"));
    await expect(pending).rejects.toThrow("reconcile cancelled");
    expect(budget.waiting).toBe(0);
  });

  it("holds every request after the platform answered 429", async () => {
    const budget = new RateBudget({ perMinute: 100_000, burstPerSecondPerRoute: 100, accountBurst: 100 });
    budget.pause(200);
    expect(await budget.acquire("/api_keys", "mutation")).toBeGreaterThan(100);
  });
});

describe("a share of the account's budget (shards on one account)", () => {
  it("scales the minute's budget and the route burst, never below one", () => {
    expect(accountShare(0.5)).toEqual({ perMinute: 350, burstPerSecondPerRoute: 20 });
    expect(accountShare(0.001)).toEqual({ perMinute: 1, burstPerSecondPerRoute: 1 });
  });
});
