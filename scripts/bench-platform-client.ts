/**
 * Benchmark: a burst of requests through the rate budget against the emulator with platform
 * rate limits on. Prints the achieved rate, the 429s the emulator served and budget waits.
 *   npm exec -- node scripts/bench-platform-client.ts [requests] [perMinute] [perRoutePerSecond]
 */
import { RateBudget } from "../src/platform/budget.ts";
import { startPlatform } from "../test/support/platform/platform.ts";

const [requests = 2_000, perMinute = 12_000, perRoutePerSecond = 120] = process.argv.slice(2).map(Number);
const platform = await startPlatform({
  rateLimits: { perMinute, perRoutePerSecond },
  seed: { projects: [{ id: "shop", name: "shop" }] },
});
const waits: number[] = [];
const client = platform.client({
  budget: new RateBudget({ perMinute, burstPerSecondPerRoute: perRoutePerSecond, accountBurst: 20 }),
  metrics: { request: () => {}, budgetWait: (ms) => waits.push(ms) },
});
try {
  const endpointId = (await client.listEndpoints("shop"))[0]!.id;
  const started = performance.now();
  const results = await Promise.allSettled(
    Array.from({ length: requests }, (_, i) =>
      i % 2 === 0 ? client.listEndpoints("shop") : client.getEndpoint("shop", endpointId),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const counters = await platform.counters();
  waits.sort((a, b) => a - b);
  const pct = (p: number) => Math.round(waits[Math.min(waits.length - 1, Math.floor(p * waits.length))] ?? 0);
  console.log(
    JSON.stringify(
      {
        requests,
        failed: results.filter((r) => r.status === "rejected").length,
        seconds: Number(seconds.toFixed(2)),
        budgetPerSecond: perMinute / 60,
        achievedPerSecond: Number((requests / seconds).toFixed(1)),
        served429: counters.rate_limited,
        budgetWaitMs: { p50: pct(0.5), p99: pct(0.99), max: pct(1) },
      },
      null,
      2,
    ),
  );
} finally {
  await platform.close();
}
