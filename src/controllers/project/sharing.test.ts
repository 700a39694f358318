// Who a project is shared with, as a Project declares it: the grant or revoke due next, table-driven.
import { describe, expect, it } from "vitest";
import { ProjectSpec, type ProjectStatus } from "../../api/project.ts";
import type { ProjectPermission } from "../../platform/index.ts";
import { sharedBy, sharingStep } from "./sharing.ts";

const spec = (emails: string[], exclusive = false) =>
  ProjectSpec.parse({ collaborators: { emails, exclusive } });
const granted = (email: string, id = `perm-${email}`): ProjectPermission => ({
  id,
  grantedToEmail: email,
  grantedAt: "2026-11-28T00:00:00Z",
  revokedAt: undefined,
});
const step = (s: ReturnType<typeof spec>, status: ProjectStatus, listed: ProjectPermission[]) => {
  const next = sharingStep(s, status, listed);
  return next && [next.change, next.email];
};

describe("the sharing a Project declares", () => {
  it.each<[string, ReturnType<typeof spec>, ProjectStatus, ProjectPermission[], unknown]>([
    ["a new address is granted", spec(["ann@example.com"]), {}, [], ["grant", "ann@example.com"]],
    ["as declared: nothing", spec(["ann@example.com"]), {}, [granted("ann@example.com")], undefined],
    [
      "addresses compare without case",
      spec(["Ann@Example.com"]),
      {},
      [granted("ann@example.com")],
      undefined,
    ],
    [
      "one it granted and the spec dropped is taken back",
      spec([]),
      { collaborators: ["bob@example.com"] },
      [granted("bob@example.com")],
      ["revoke", "bob@example.com"],
    ],
    ["a grant made elsewhere is left alone", spec([]), {}, [granted("eve@example.com")], undefined],
    [
      "unless the list is exclusive",
      spec([], true),
      {},
      [granted("eve@example.com")],
      ["revoke", "eve@example.com"],
    ],
    [
      "a grant revoked elsewhere is made again",
      spec(["ann@example.com"]),
      { collaborators: ["ann@example.com"] },
      [{ ...granted("ann@example.com"), revokedAt: "2026-11-28T01:00:00Z" }],
      ["grant", "ann@example.com"],
    ],
  ])("%s", (_, s, status, listed, expected) => {
    expect(step(s, status, listed)).toEqual(expected);
  });

  it("status records the addresses the spec names that the project is shared with", () => {
    const s = spec(["ann@example.com", "bob@example.com"]);
    expect(sharedBy(s, [granted("ann@example.com"), granted("eve@example.com")])).toEqual([
      "ann@example.com",
    ]);
  });
});
