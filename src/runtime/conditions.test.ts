import { describe, expect, it } from "vitest";
import { setCondition, isConditionTrue } from "./conditions.ts";
import { jsonEqual, mergePatchFor } from "./status.ts";

const t0 = new Date("2026-01-01T10:00:00.123Z");
const t1 = new Date("2026-01-01T11:00:00Z");

describe("conditions", () => {
  it("keeps the transition time while the status stays the same, even if the reason changes", () => {
    const ready = setCondition(
      undefined,
      { type: "Ready", status: "False", reason: "Provisioning", message: "" },
      t0,
    );
    expect(ready[0]?.lastTransitionTime).toBe("2026-01-01T10:00:00Z");
    const still = setCondition(
      ready,
      { type: "Ready", status: "False", reason: "Waiting", message: "op" },
      t1,
    );
    expect(still[0]).toMatchObject({ reason: "Waiting", lastTransitionTime: "2026-01-01T10:00:00Z" });
    const flipped = setCondition(still, { type: "Ready", status: "True", reason: "Ready", message: "" }, t1);
    expect(flipped[0]?.lastTransitionTime).toBe("2026-01-01T11:00:00Z");
    expect(isConditionTrue(flipped, "Ready")).toBe(true);
    expect(ready[0]?.reason).toBe("Provisioning");
  });

  it("setting the same condition again yields an equal status, so the status writer skips it", () => {
    const input = {
      type: "Ready",
      status: "True" as const,
      reason: "Ready",
      message: "",
      observedGeneration: 2,
    };
    const first = setCondition([], input, t0);
    expect(jsonEqual(setCondition(first, input, t1), first)).toBe(true);
  });
});

describe("status merge patches", () => {
  it("sets what changed, nulls what went away, and leaves the rest out", () => {
    const current = {
      phase: "Pending",
      endpoint: { host: "h", port: 5432 },
      operationId: "op-1",
      conditions: [1],
    };
    const desired = { phase: "Ready", endpoint: { host: "h" }, conditions: [1] };
    expect(mergePatchFor(current, desired)).toEqual({
      phase: "Ready",
      endpoint: { port: null },
      operationId: null,
    });
  });

  it("treats key order and undefined members as no change", () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1, d: undefined })).toBe(true);
    expect(jsonEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
  });
});
