// Random operation durations: each run drawn within ±jitter of its configured
// duration from a seeded source, so a run repeats, and a per-project record of
// what was drawn for benchmarks to compute their floor from.
import { describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../../test/emulator/harness.ts";

const P = "/projects/demo-project";

/** Runs `n` start/suspend operations on the seeded endpoint one after another; returns their lengths. */
async function runOperations(h: Harness, n: number): Promise<number[]> {
  const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
  const lengths: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await h.api("POST", `${P}/endpoints/${seeded.id}/${i % 2 === 0 ? "start" : "suspend"}`);
    expect(res.status).toBe(200);
    h.clock.advance(5000); // beyond the longest possible draw
    const op = (await h.api("GET", `${P}/operations/${res.body.operations[0].id}`)).body.operation;
    expect(op.status).toBe("finished");
    lengths.push(op.total_duration_ms);
  }
  return lengths;
}

describe("operation durations", () => {
  it("with a jitter of 0.25 each run lasts within ±25% of its duration, and they differ", async () => {
    const h = await startHarness({ operationDurationMs: 1000, operationDurationJitter: 0.25, randomSeed: 7 });
    const lengths = await runOperations(h, 20);
    for (const ms of lengths) {
      expect(ms).toBeGreaterThanOrEqual(750);
      expect(ms).toBeLessThanOrEqual(1250);
    }
    expect(new Set(lengths).size).toBeGreaterThan(10);
  });

  it("the same seed draws the same durations; another seed draws others", async () => {
    const options = { operationDurationMs: 2000, operationDurationJitter: 0.5 };
    const first = await runOperations(await startHarness({ ...options, randomSeed: 2026 }), 6);
    const again = await runOperations(await startHarness({ ...options, randomSeed: 2026 }), 6);
    const other = await runOperations(await startHarness({ ...options, randomSeed: 2027 }), 6);
    expect(again).toEqual(first);
    expect(other).not.toEqual(first);
  });

  it("the admin record sums, per project and action, exactly what the operations lasted", async () => {
    const h = await startHarness({ operationDurationMs: 1000, operationDurationJitter: 0.25, randomSeed: 1 });
    const lengths = await runOperations(h, 8);
    const other = await h.admin("POST", "/projects", { id: "other-project", name: "other" });
    expect(other.status).toBe(201);
    const res = await h.admin("GET", "/operations/durations");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ random_seed: 1, jitter: 0.25, lock_scope: "project" });
    const demo = res.body.projects["demo-project"];
    expect(demo.runs).toBe(8);
    expect(demo.drawn_ms).toBe(lengths.reduce((a, b) => a + b, 0));
    expect(demo.by_action.start_compute.runs + demo.by_action.suspend_compute.runs).toBe(8);
    expect(demo.by_action.start_compute.min_ms).toBe(Math.min(...lengths.filter((_, i) => i % 2 === 0)));
    // The new project's create_timeline has been drawn (it runs); its start_compute not yet.
    expect(res.body.projects["other-project"].by_action).toEqual({
      create_timeline: expect.objectContaining({ runs: 1 }),
    });
  });

  it("a jitter outside 0..1 is refused, naming the option", async () => {
    await expect(startHarness({ operationDurationJitter: 1.5 })).rejects.toThrow(/operationDurationJitter/);
  });
});
