// What a present Branch does next, with no API server and no platform: a reset from its parent
// when the annotation has a new value (refused for a root branch), the roles and databases it is
// missing in an order that lets each be created, and when they must be listed at all.
import { describe, expect, it } from "vitest";
import { BranchSpec } from "../../api/branch.ts";
import {
  contentStatus,
  contentStep,
  contentUnknown,
  restoreRequested,
  restoreStep,
  type BranchContent,
} from "./plan.ts";

const spec = (fields: Record<string, unknown> = {}) => BranchSpec.parse({ projectId: "proj", ...fields });

function content(roles: string[], databases: [string, string][] = []): BranchContent {
  return { roles, databases: databases.map(([name, owner]) => ({ name, owner })) };
}

describe("a reset from the parent, asked by the restoredFromParentAt annotation", () => {
  it.each([
    ["no annotation", undefined, undefined, undefined],
    ["a first value", "2026-11-23T03:00:00Z", undefined, "2026-11-23T03:00:00Z"],
    ["the value already acted upon", "2026-11-23T03:00:00Z", "2026-11-23T03:00:00Z", undefined],
    ["a new value", "2026-11-23T04:00:00Z", "2026-11-23T03:00:00Z", "2026-11-23T04:00:00Z"],
    ["any new text, not only a timestamp", "again", "2026-11-23T03:00:00Z", "again"],
  ])("%s", (_, annotation, actedUpon, expected) => {
    expect(restoreRequested(annotation, { restoredFromParentAt: actedUpon })).toBe(expected);
  });

  it("restores from the branch's parent", () => {
    expect(restoreStep({ id: "br-child", parentId: "br-main" }, "v1")).toMatchObject({
      change: "restore",
      restoredFromParentAt: "v1",
      parentId: "br-main",
    });
  });

  it("is refused for a branch without a parent, naming the annotation and the branch", () => {
    const step = restoreStep({ id: "br-root", parentId: undefined }, "v1");
    expect(step).toEqual({
      problem: expect.stringContaining("neoncloud.dev/restoredFromParentAt=v1") as string,
    });
    expect((step as { problem: string }).problem).toContain("branch br-root has no parent");
  });
});

describe("the roles and databases a branch is missing, one step at a time", () => {
  const wants = spec({
    roles: [{ name: "app" }, { name: "reporting" }],
    databases: [
      { name: "shop", owner: "app" },
      { name: "legacy", owner: "neondb_owner" },
    ],
  });
  it.each([
    ["nothing on the branch: the first role", content([]), { change: "createRole", name: "app" }],
    ["the second role", content(["app"]), { change: "createRole", name: "reporting" }],
    [
      "roles done: the first database, owned by a role just created",
      content(["app", "reporting", "neondb_owner"]),
      { change: "createDatabase", name: "shop", owner: "app" },
    ],
    [
      "a database owned by a role from the parent",
      content(["app", "reporting", "neondb_owner"], [["shop", "app"]]),
      { change: "createDatabase", name: "legacy", owner: "neondb_owner" },
    ],
    [
      "everything there (an existing database keeps its owner)",
      content(
        ["app", "reporting", "neondb_owner"],
        [
          ["shop", "someone_else"],
          ["legacy", "neondb_owner"],
        ],
      ),
      undefined,
    ],
  ])("%s", (_, has, expected) => {
    const step = contentStep(wants, has, "br-1");
    // What is decided, apart from the words the event and condition show.
    expect(
      step && !("problem" in step)
        ? { ...step, action: undefined, reason: undefined, message: undefined }
        : step,
    ).toEqual(expected);
  });

  it("refuses a database whose owner the branch does not have, naming the field", () => {
    const bad = spec({ roles: [{ name: "app" }], databases: [{ name: "shop", owner: "nobody" }] });
    expect(contentStep(bad, content(["app"]), "br-1")).toEqual({
      problem: "spec.databases[0].owner: role nobody is neither in spec.roles nor on branch br-1",
    });
  });

  it("creates nothing, and deletes nothing, that the spec does not name", () => {
    expect(contentStep(spec(), content(["other"], [["otherdb", "other"]]), "br-1")).toBeUndefined();
  });

  it("shows in status only what the spec names and the branch has", () => {
    expect(
      contentStatus(
        wants,
        content(
          ["app", "neondb_owner", "other"],
          [
            ["shop", "app"],
            ["x", "app"],
          ],
        ),
      ),
    ).toEqual({
      roles: ["app"],
      databases: [{ name: "shop", owner: "app" }],
    });
  });
});

describe("when roles and databases are listed", () => {
  const wants = spec({ roles: [{ name: "app" }], databases: [{ name: "shop", owner: "app" }] });
  const seen = { roles: ["app"], databases: [{ name: "shop", owner: "app" }], observedGeneration: 3 };
  it.each([
    ["the spec names none", spec(), { observedGeneration: 2 }, 3, false],
    ["the status shows them all, same generation", wants, seen, 3, false],
    ["a new generation", wants, seen, 4, true],
    ["a role not shown yet", wants, { ...seen, roles: [] }, 3, true],
    [
      "a database not shown yet (after a reset cleared them)",
      wants,
      { ...seen, databases: undefined },
      3,
      true,
    ],
  ])("%s: %s", (_, want, status, generation, expected) => {
    expect(contentUnknown(want, status, generation)).toBe(expected);
  });
});
