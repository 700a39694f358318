// Rate limits like the platform's: a budget per account per minute and bursts
// per route per second, answered with 429.
import { describe, expect, it } from "vitest";
import { startHarness } from "../../test/emulator/harness.ts";
import { RateLimiter, platformRateLimits } from "./rate-limit.ts";

describe("rate limits", () => {
  it("a burst beyond the per-route limit gets 429 while other routes still answer", async () => {
    const h = await startHarness({ rateLimits: { perMinute: 1000, perRoutePerSecond: 3 } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await h.api("GET", "/projects")).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await h.api("GET", "/api_keys")).status).toBe(200);
  });

  it("the account's per-minute budget spans all routes, and 429s are counted", async () => {
    const h = await startHarness({ rateLimits: { perMinute: 3, perRoutePerSecond: 100 } });
    await h.api("GET", "/projects");
    await h.api("GET", "/api_keys");
    await h.api("GET", "/projects/demo-project/endpoints");
    const limited = await h.api("GET", "/projects/demo-project/operations");
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ code: "", message: expect.any(String), request_id: expect.any(String) });
    const counters = (await h.admin("GET", "/counters")).body;
    expect(counters.rate_limited).toBe(1);
    expect(counters.by_route["GET /projects/:project_id/operations"]).toEqual({ "429": 1 });
  });

  it("with the platform's limits an account gets 40 requests per second on a route and 700 per minute", () => {
    let now = 0;
    const limiter = new RateLimiter(platformRateLimits, () => now);
    const burst = Array.from({ length: 41 }, () => limiter.admit("account", "GET /projects"));
    expect(burst.filter(Boolean)).toHaveLength(40);
    let admitted = 40;
    for (let second = 1; second < 60; second++) {
      now = second * 1000;
      for (let i = 0; i < 40; i++) if (limiter.admit("account", `GET /route-${i % 4}`)) admitted++;
    }
    // 700 at once plus what refilled meanwhile (700 per minute, i.e. 11.67 per second, over 59 seconds).
    expect(admitted).toBeGreaterThanOrEqual(700);
    expect(admitted).toBeLessThanOrEqual(700 + Math.ceil((700 * 59) / 60));
    expect(limiter.admit("other-account", "GET /projects")).toBe(true);
  });
});
