// What a Branch decides with no API server and no platform: its name, the expiry it creates with,
// the one PATCH for a difference, and what a vanished branch means.
import { describe, expect, it } from "vitest";
import { BranchSpec } from "../../api/branch.ts";
import type { Branch } from "../../platform/index.ts";
import { creationExpiry, expiryProblem, plan, usable, vanished } from "./plan.ts";

/** The resource's owner mark: the name a branch the spec names none for is given. */
const mark = "k8s-0a1b2c3d-0123456789abcdef";
const now = new Date("2026-11-23T00:00:00.400Z");

function branch(fields: Partial<Branch> = {}): Branch {
  return {
    id: "br-one",
    projectId: "proj",
    parentId: "br-main",
    parentLsn: undefined,
    parentTimestamp: "2026-11-22T00:00:00Z",
    name: mark,
    currentState: "ready",
    pendingState: undefined,
    stateChangedAt: "2026-11-22T00:00:00Z",
    logicalSize: undefined,
    default: false,
    protected: false,
    createdAt: "2026-11-22T00:00:00Z",
    updatedAt: "2026-11-22T00:00:00Z",
    expiresAt: undefined,
    lastResetAt: undefined,
    initSource: "parent-data",
    annotations: undefined,
    ...fields,
  };
}

const spec = (fields: Record<string, unknown> = {}) => BranchSpec.parse({ projectId: "proj", ...fields });

describe("the PATCH a Branch sends for a difference", () => {
  it.each([
    ["nothing differs", {}, {}, undefined],
    ["a name the spec gives", { name: "preview-7" }, {}, { name: "preview-7" }],
    ["the derived name after a rename outside", {}, { name: "renamed" }, { name: mark }],
    ["an adopted branch keeps its name", { branchId: "br-one" }, { name: "theirs" }, undefined],
    ["protection stated", { protected: true }, {}, { protected: true }],
    ["protection not stated is left alone", {}, { protected: true }, undefined],
    [
      "a new expiresAt",
      { expiresAt: "2026-12-01T00:00:00Z" },
      { expiresAt: "2026-11-30T00:00:00Z" },
      { expiresAt: "2026-12-01T00:00:00Z" },
    ],
    [
      "the same instant in another offset is no change",
      { expiresAt: "2026-12-01T01:00:00+01:00" },
      { expiresAt: "2026-12-01T00:00:00Z" },
      undefined,
    ],
    [
      "a ttl keeps the expiry computed at creation",
      { ttl: "1h" },
      { expiresAt: "2026-11-22T01:00:00Z" },
      undefined,
    ],
    [
      "a ttl gives an adopted branch without expiry one",
      { ttl: "1h", branchId: "br-one" },
      {},
      { expiresAt: "2026-11-23T01:00:01Z" },
    ],
    ["no expiry stated leaves the platform's", {}, { expiresAt: "2026-11-30T00:00:00Z" }, undefined],
  ])("%s", (_, fields, observed, expected) => {
    expect(plan(spec(fields), branch(observed), mark, now)).toEqual(expected);
  });
});

describe("the expiry a Branch is created with", () => {
  it.each([
    ["none", {}, undefined],
    ["expiresAt as written", { expiresAt: "2026-12-01T00:00:00Z" }, "2026-12-01T00:00:00Z"],
    ["ttl from now, in whole seconds", { ttl: "72h" }, "2026-11-26T00:00:01Z"],
    ["a short ttl", { ttl: "5s" }, "2026-11-23T00:00:06Z"],
  ])("%s", (_, fields, expected) => {
    expect(creationExpiry(spec(fields), now)).toBe(expected);
  });

  it("refuses an expiry in the past, naming the field", () => {
    expect(expiryProblem("2026-11-22T00:00:00Z", now)).toMatch(/^spec\.expiresAt: .* not in the future$/);
    expect(expiryProblem("2026-11-24T00:00:00Z", now)).toBeUndefined();
  });
});

describe("what a vanished branch means", () => {
  it("past its expiry: the platform's deletion, reported as Expired", () => {
    const gone = vanished({ branchId: "br-one", expiresAt: "2026-11-22T23:59:59Z" }, now);
    expect(gone.reason).toBe("Expired");
    expect(gone.message).toContain("not recreated");
  });
  it.each([
    ["no expiry", {}],
    ["an expiry still ahead", { expiresAt: "2026-11-24T00:00:00Z" }],
  ])("with %s: deleted outside", (_, fields) => {
    expect(vanished({ branchId: "br-one", ...fields }, now).reason).toBe("BranchDeleted");
  });
});

describe("when a branch is usable", () => {
  it.each([
    ["ready", true],
    ["archived", true],
    ["init", false],
    ["resetting", false],
  ])("%s: %s", (state, expected) => {
    expect(usable(branch({ currentState: state }))).toBe(expected);
  });
});
