// Project sharing by e-mail: a grant lets the invited user's keys work in the project (a
// collaborator's rights: no deletion) and list it in /projects/shared; a revocation takes it
// away at once. Every answer, success or refusal, conforms to the official OpenAPI document.
import { describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../../test/emulator/harness.ts";
import { conforming } from "../../test/emulator/openapi.ts";

const L = "/projects/{project_id}/permissions";
const one = `${L}/{permission_id}`;
const shared = "/projects/shared";

/** Ada's world (the harness's demo-project), with Bob added through the admin API. */
async function withBob(): Promise<{ h: Harness; bob: string }> {
  const h = await startHarness({
    seed: {
      account: { name: "Ada", email: "ada@example.com" },
      projects: [{ id: "demo-project", name: "demo", branches: [{ name: "dev" }] }],
    },
  });
  const added = await h.admin("POST", "/accounts", { account: { name: "Bob", email: "bob@example.com" } });
  expect(added.status).toBe(201);
  return { h, bob: added.body.api_key as string };
}

describe("sharing a project by e-mail", () => {
  it("is granted, listed and revoked; the invited user's key works in the project until then", async () => {
    const { h, bob } = await withBob();
    const asBob = { key: bob };
    expect((await conforming(h, "GET", shared, shared, undefined, asBob)).body.projects).toEqual([]);
    expect(
      (await conforming(h, "GET", "/projects/{project_id}", "/projects/demo-project", undefined, asBob))
        .status,
    ).toBe(404);

    const granted = await conforming(h, "POST", L, "/projects/demo-project/permissions", {
      email: "bob@example.com",
    });
    expect(granted.status).toBe(200);
    expect(granted.body).toEqual({
      id: expect.any(String),
      granted_to_email: "bob@example.com",
      granted_at: expect.any(String),
    });
    const listed = await conforming(h, "GET", L, "/projects/demo-project/permissions");
    expect(listed.body.project_permissions).toEqual([granted.body]);

    // Bob sees it shared with him, and works in it as a collaborator.
    const seen = await conforming(h, "GET", shared, shared, undefined, asBob);
    expect(seen.body.projects.map((p: { id: string }) => p.id)).toEqual(["demo-project"]);
    const branches = (await h.api("GET", "/projects/demo-project/branches", undefined, asBob)).body.branches;
    const dev = branches.find((b: { name: string }) => b.name === "dev").id;
    const created = await conforming(
      h,
      "POST",
      "/projects/{project_id}/endpoints",
      "/projects/demo-project/endpoints",
      { endpoint: { branch_id: dev, type: "read_write" } },
      asBob,
    );
    expect(created.status).toBe(201);
    // A collaborator does not delete the project: refused, and not as if it were gone.
    const deleted = await conforming(
      h,
      "DELETE",
      "/projects/{project_id}",
      "/projects/demo-project",
      undefined,
      asBob,
    );
    expect(deleted.status).toBe(403);
    expect((await h.api("GET", "/projects/demo-project")).status).toBe(200);
    // Nor is it in Bob's own project list: shared projects are listed apart.
    expect((await h.api("GET", "/projects", undefined, asBob)).body.projects).toEqual([]);

    const revoked = await conforming(
      h,
      "DELETE",
      one,
      `/projects/demo-project/permissions/${granted.body.id}`,
    );
    expect(revoked.body).toEqual({ ...granted.body, revoked_at: expect.any(String) });
    expect(
      (await conforming(h, "GET", L, "/projects/demo-project/permissions")).body.project_permissions,
    ).toEqual([]);
    expect((await conforming(h, "GET", shared, shared, undefined, asBob)).body.projects).toEqual([]);
    const gone = await conforming(
      h,
      "GET",
      "/projects/{project_id}/endpoints",
      "/projects/demo-project/endpoints",
      undefined,
      asBob,
    );
    expect(gone).toMatchObject({ status: 404, body: { message: "project not found" } });
    // A permission revoked already, or never granted, is unknown.
    expect(
      (await conforming(h, "DELETE", one, `/projects/demo-project/permissions/${granted.body.id}`)).status,
    ).toBe(404);
  });

  it("refuses a second grant to the same address (in any case), a malformed address, and strangers", async () => {
    const { h, bob } = await withBob();
    const path = "/projects/demo-project/permissions";
    expect((await conforming(h, "POST", L, path, { email: "bob@example.com" })).status).toBe(200);
    const again = await conforming(h, "POST", L, path, { email: "Bob@Example.com" });
    expect(again.status).toBe(409);
    expect(again.body.message).not.toMatch(/bob@/i); // the document marks addresses sensitive
    const malformed = await conforming(h, "POST", L, path, { email: "not an address" });
    expect(malformed).toMatchObject({ status: 400, body: { message: expect.stringMatching(/^email/) } });
    expect((await conforming(h, "POST", L, path, {})).status).toBe(400);
    // Carol, whom nobody invited, neither lists nor grants.
    const carol = (
      await h.admin("POST", "/accounts", { account: { name: "Carol", email: "carol@example.com" } })
    ).body.api_key as string;
    expect((await conforming(h, "GET", L, path, undefined, { key: carol })).status).toBe(404);
    expect(
      (await conforming(h, "POST", L, path, { email: "carol@example.com" }, { key: carol })).status,
    ).toBe(404);
    // A collaborator may invite others, as the platform lets collaborators do.
    expect((await conforming(h, "POST", L, path, { email: "carol@example.com" }, { key: bob })).status).toBe(
      200,
    );
    expect((await h.api("GET", shared, undefined, { key: carol })).body.projects).toHaveLength(1);
    // The admin API knows a user by its e-mail: a second Bob is refused.
    expect(
      (await h.admin("POST", "/accounts", { account: { name: "Bob 2", email: "BOB@example.com" } })).status,
    ).toBe(409);
  });

  it("/projects/shared pages by project id, searches, and shows nothing to an organization's key", async () => {
    const orgKey = "o".repeat(64);
    const h = await startHarness({
      seed: {
        account: { email: "ada@example.com" },
        projects: ["p-a", "p-b", "p-c"].map((id) => ({ id, name: `shared ${id}` })),
        accounts: [
          {
            account: { kind: "organization" as const, id: "org-acme" },
            bootstrap_key: { name: "acme", key: orgKey },
          },
        ],
      },
    });
    const bob = (await h.admin("POST", "/accounts", { account: { email: "bob@example.com" } })).body
      .api_key as string;
    for (const id of ["p-c", "p-a", "p-b"]) {
      await h.api("POST", `/projects/${id}/permissions`, { email: "bob@example.com" });
    }
    const first = await conforming(h, "GET", shared, `${shared}?limit=2`, undefined, { key: bob });
    expect(first.body.projects.map((p: { id: string }) => p.id)).toEqual(["p-a", "p-b"]);
    expect(first.body.pagination).toEqual({ cursor: "p-b" });
    const next = await conforming(h, "GET", shared, `${shared}?limit=2&cursor=p-b`, undefined, { key: bob });
    expect(next.body.projects.map((p: { id: string }) => p.id)).toEqual(["p-c"]);
    const found = await conforming(h, "GET", shared, `${shared}?search=P-C`, undefined, { key: bob });
    expect(found.body.projects.map((p: { id: string }) => p.id)).toEqual(["p-c"]);
    expect((await conforming(h, "GET", shared, `${shared}?limit=401`, undefined, { key: bob })).status).toBe(
      400,
    );
    expect((await conforming(h, "GET", shared, shared, undefined, { key: orgKey })).body.projects).toEqual(
      [],
    );
  });
});
