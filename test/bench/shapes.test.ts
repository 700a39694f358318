// The bench's shapes and floors (scripts/bench/shapes.ts): what a `--shape` flag means, and that a
// floor is what the platform's limits and the drawn operations allow, whichever binds.
import { describe, expect, it } from "vitest";
import { admissionTimes, floorOf, parseShape, type Shape } from "../../scripts/bench/shapes.ts";

const defaults = { operationMs: 2000, jitter: 0.25, lockScope: "project" as const, randomSeed: 2026 };

describe("a --shape flag", () => {
  it("names endpoints over projects and takes the rest from the global flags", () => {
    expect(parseShape("200x10", defaults)).toEqual({ ...defaults, endpoints: 200, projects: 10 });
  });

  it("may set the operations, the lock scope and the seed of that shape alone", () => {
    expect(parseShape("50x1,operation-ms=500,jitter=0,lock=branch,seed=7", defaults)).toEqual({
      endpoints: 50,
      projects: 1,
      operationMs: 500,
      jitter: 0,
      lockScope: "branch",
      randomSeed: 7,
    });
  });

  it("is refused with the part it cannot read", () => {
    expect(() => parseShape("200/10", defaults)).toThrow(/ENDPOINTSxPROJECTS/);
    expect(() => parseShape("200x10,lock=table", defaults)).toThrow(/lock=table/);
    expect(() => parseShape("5x10", defaults)).toThrow(/at least one endpoint per project/);
  });
});

describe("the platform's limits", () => {
  it("admit a burst of 40 on one route, then 40 a second", () => {
    const times = admissionTimes(120);
    expect(times.slice(0, 40).every((t) => t === 0)).toBe(true);
    expect(times[79]).toBeCloseTo(1000, 6);
    expect(times[119]).toBeCloseTo(2000, 6);
  });

  it("hold an account to its 700 a minute once the first 700 are spent", () => {
    const times = admissionTimes(1400);
    // 700 more need the minute's tokens back, at 700 a minute: far slower than the route's 40 a second.
    expect(times[1399]! - times[699]!).toBeGreaterThan(40_000);
  });
});

describe("a shape's floor", () => {
  const shape = (endpoints: number, projects: number, lockScope: Shape["lockScope"] = "project"): Shape => ({
    ...defaults,
    endpoints,
    projects,
    lockScope,
  });

  it("is one project's operations in a row when they take longer than the creates", () => {
    const drawn = new Map([["p0", Array.from({ length: 50 }, () => 2000)]]);
    const floor = floorOf(shape(50, 1), drawn);
    expect(floor.ms).toBe(100_000);
    expect(floor.operationsMs).toBe(100_000);
    expect(floor.schedule.p50Ms / floor.schedule.allMs).toBeCloseTo(0.5, 6);
  });

  it("is the creates at the platform's limits plus the shortest operation when every endpoint has a project", () => {
    const drawn = new Map(Array.from({ length: 100 }, (_, i) => [`p${i}`, [1500 + i * 10]]));
    const floor = floorOf(shape(100, 100), drawn);
    expect(floor.createsMs).toBe(admissionTimes(100).at(-1));
    expect(floor.ms).toBe(floor.createsMs + 1500);
    expect(floor.how).toContain("100 creates");
  });

  it("on a branch lock counts only the longest operation, not a project's sum", () => {
    const drawn = new Map([["p0", [1800, 2400, 2100]]]);
    expect(floorOf(shape(3, 1, "branch"), drawn).operationsMs).toBe(2400);
    expect(floorOf(shape(3, 1, "project"), drawn).operationsMs).toBe(6300);
  });
});
