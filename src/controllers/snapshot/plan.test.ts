// The Snapshot's plan, table-driven: the name and expiry it is taken with, the one PATCH a snapshot
// that exists needs (a rename, the expiry the spec states), what is refused before anything is
// sent, and what a snapshot gone since it was recorded means.
import { describe, expect, it } from "vitest";
import { SnapshotSpec } from "../../api/snapshot.ts";
import type { Snapshot } from "../../platform/index.ts";
import { Refusal } from "../managed/refusal.ts";
import { creationExpiry, desiredName, expiryProblem, plan, vanished } from "./plan.ts";

const mark = "k8s-0a1b2c3d-0123456789abcdef";
const now = new Date("2026-11-28T12:00:00.250Z");
const spec = (fields: Record<string, unknown> = {}) =>
  SnapshotSpec.parse({ projectId: "shop", branchId: "br-main", ...fields });

function snapshot(fields: Partial<Snapshot> = {}): Snapshot {
  return {
    id: "snap-1",
    name: mark,
    slug: undefined,
    lsn: "0/1F4D3A8",
    timestamp: "2026-11-28T11:00:00Z",
    sourceBranchId: "br-main",
    createdAt: "2026-11-28T11:00:00Z",
    expiresAt: undefined,
    manual: true,
    fullSize: undefined,
    diffSize: undefined,
    ...fields,
  };
}

describe("what a Snapshot is taken with", () => {
  it.each([
    [{}, mark],
    [{ name: "before-migration" }, "before-migration"],
    // An adopted snapshot keeps the name it has unless the spec names one.
    [{ snapshotId: "snap-9", branchId: undefined }, undefined],
    [{ snapshotId: "snap-9", branchId: undefined, name: "kept" }, "kept"],
  ])("%j is named %s", (fields, name) => {
    expect(desiredName(spec(fields), mark)).toBe(name);
  });

  it.each([
    [{}, undefined],
    [{ expiresAt: "2026-12-01T00:00:00Z" }, "2026-12-01T00:00:00Z"],
    // A ttl counts from the create, rounded up to the second the platform keeps.
    [{ ttl: "168h" }, "2026-12-05T12:00:01Z"],
    [{ ttl: "1h" }, "2026-11-28T13:00:01Z"],
  ])("%j expires at %s", (fields, expiresAt) => {
    expect(creationExpiry(spec(fields), now)).toBe(expiresAt);
  });

  it.each([
    [undefined, undefined],
    ["2026-11-28T12:00:01Z", undefined],
    ["2026-11-28T12:00:00Z", "spec.expiresAt: 2026-11-28T12:00:00Z is not in the future"],
    ["2026-01-01T00:00:00Z", "spec.expiresAt: 2026-01-01T00:00:00Z is not in the future"],
  ])("an expiry of %s is refused: %s", (expiresAt, problem) => {
    expect(expiryProblem(expiresAt, now)).toBe(problem);
  });
});

describe("the one change a Snapshot that exists needs", () => {
  it.each([
    ["as declared", {}, {}, undefined],
    ["renamed", { name: "nightly" }, {}, { name: "nightly" }],
    ["its expiry moved", { expiresAt: "2026-12-24T00:00:00Z" }, {}, { expiresAt: "2026-12-24T00:00:00Z" }],
    [
      "the same instant written another way is no change",
      { expiresAt: "2026-12-24T01:00:00+01:00" },
      { expiresAt: "2026-12-24T00:00:00Z" },
      undefined,
    ],
    [
      "both at once, in one PATCH",
      { name: "nightly", expiresAt: "2026-12-24T00:00:00Z" },
      {},
      { name: "nightly", expiresAt: "2026-12-24T00:00:00Z" },
    ],
    // A ttl was computed once at the create: the snapshot's expiry is not chased afterwards.
    ["a ttl is not chased", { ttl: "1h" }, { expiresAt: "2026-11-28T11:30:00Z" }, undefined],
    [
      "an adopted snapshot without a name keeps its own",
      { snapshotId: "snap-1", branchId: undefined },
      { name: "theirs" },
      undefined,
    ],
  ])("%s", (_what, fields, observed, patch) => {
    const step = plan(spec(fields), snapshot(observed), mark, now);
    expect(step?.patch).toEqual(patch);
    if (step) expect(step.message).toBe(`updating ${Object.keys(patch ?? {}).join(", ")} of snapshot snap-1`);
  });

  it("refuses moving the expiry into the past, naming the field, before anything is sent", () => {
    const refused = () => plan(spec({ expiresAt: "2026-11-01T00:00:00Z" }), snapshot(), mark, now);
    expect(refused).toThrow(Refusal);
    expect(refused).toThrow("spec.expiresAt: 2026-11-01T00:00:00Z is not in the future");
  });
});

describe("a snapshot gone since it was recorded", () => {
  it("is Expired once its expiry passed, and never taken again", () => {
    const r = vanished({ snapshotId: "snap-1", expiresAt: "2026-11-28T11:59:59Z" }, now);
    expect(r.reason).toBe("Expired");
    expect(r.message).toContain("snapshot snap-1 expired at 2026-11-28T11:59:59Z");
    expect(r.message).toContain("it is not taken again");
  });

  it("is SnapshotDeleted when it had not expired: deleted outside the operator", () => {
    for (const expiresAt of [undefined, "2026-11-29T00:00:00Z"]) {
      const r = vanished({ snapshotId: "snap-1", expiresAt }, now);
      expect(r.reason).toBe("SnapshotDeleted");
      expect(r.message).toContain("snapshot snap-1 was deleted outside the operator");
    }
  });
});
