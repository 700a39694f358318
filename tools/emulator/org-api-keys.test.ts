// An organization's projects and keys: its admin's personal key creates organization keys, one
// scoped to a project included; a scoped key works in its project and nowhere else (404, as the
// platform answers such a key outside its project), cannot delete it (403), and fails with 401
// once revoked. A member acts on the organization's projects but neither deletes them nor manages
// keys. Every answer conforms to the official OpenAPI document.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../../test/emulator/harness.ts";
import { conforming } from "../../test/emulator/openapi.ts";
import { acmeSeed, adaKey, orgKey } from "../../test/emulator/organization.ts";
import { startEmulator } from "./emulator.ts";
import { platformRateLimits } from "./rate-limit.ts";
import { loadSeedFile } from "./seed.ts";

const maxKey = "m".repeat(64);
const otherKey = "x".repeat(64);
const K = "/organizations/{org_id}/api_keys";
const acmeKeys = "/organizations/org-acme/api_keys";

/** Acme owns two projects; Ada is its admin, Max a member; another organization has its own. */
const acme = acmeSeed(
  [
    { id: "acme-shop", name: "shop", branches: [{ name: "dev" }] },
    { id: "acme-blog", name: "blog" },
  ],
  [
    {
      account: {
        name: "Max",
        email: "max@example.com",
        organizations: [{ id: "org-acme", name: "Acme", role: "member" }],
      },
      bootstrap_key: { name: "max", key: maxKey },
    },
    {
      account: { kind: "organization", id: "org-other", name: "Other" },
      bootstrap_key: { name: "other", key: otherKey },
      projects: [{ id: "other-project", name: "other" }],
    },
  ],
);

/** A key Ada creates for the organization, scoped to `project_id` when given. */
async function orgApiKey(h: Harness, body: { key_name: string; project_id?: string }) {
  const created = await conforming(h, "POST", K, acmeKeys, body, { key: adaKey });
  expect(created.status).toBe(200);
  return created.body as { id: number; key: string; project_id?: string };
}

describe("a project-scoped organization key", () => {
  it("works in its project: lists it alone, reads it, creates an endpoint, shares it", async () => {
    const h = await startHarness({ seed: acme });
    const scoped = await orgApiKey(h, { key_name: "shop-ci", project_id: "acme-shop" });
    expect(scoped).toMatchObject({
      name: "shop-ci",
      project_id: "acme-shop",
      created_by: expect.any(String),
    });
    const as = { key: scoped.key };
    const listed = await conforming(h, "GET", "/projects", "/projects", undefined, as);
    expect(listed.body.projects.map((p: { id: string }) => p.id)).toEqual(["acme-shop"]);
    const named = await conforming(h, "GET", "/projects", "/projects?org_id=org-acme", undefined, as);
    expect(named.body.projects.map((p: { id: string }) => p.id)).toEqual(["acme-shop"]);
    expect(
      (await conforming(h, "GET", "/projects/{project_id}", "/projects/acme-shop", undefined, as)).body
        .project,
    ).toMatchObject({ id: "acme-shop", org_id: "org-acme" });
    const endpoints = "/projects/{project_id}/endpoints";
    expect(
      (await conforming(h, "GET", endpoints, "/projects/acme-shop/endpoints", undefined, as)).body.endpoints,
    ).toHaveLength(1);
    const branches = (await h.api("GET", "/projects/acme-shop/branches", undefined, as)).body.branches;
    const dev = branches.find((b: { name: string }) => b.name === "dev").id as string;
    const created = await conforming(
      h,
      "POST",
      endpoints,
      "/projects/acme-shop/endpoints",
      { endpoint: { branch_id: dev, type: "read_write" } },
      as,
    );
    expect(created.status).toBe(201);
    // Who it is: the organization, which /users/me/organizations answers for such a key.
    expect((await conforming(h, "GET", "/auth", "/auth", undefined, as)).body).toEqual({
      account_id: "org-acme",
      auth_method: "api_key_org",
    });
    const orgs = await conforming(
      h,
      "GET",
      "/users/me/organizations",
      "/users/me/organizations",
      undefined,
      as,
    );
    expect(orgs.body.organizations.map((o: { id: string }) => o.id)).toEqual(["org-acme"]);
    // Member-level: it invites collaborators.
    const path = "/projects/acme-shop/permissions";
    const shared = { email: "eve@example.com" };
    expect((await conforming(h, "POST", "/projects/{project_id}/permissions", path, shared, as)).status).toBe(
      200,
    );
  });

  it("is refused on every other project (404) and on the account's routes (404), and cannot delete its own (403)", async () => {
    const h = await startHarness({ seed: acme });
    const scoped = await orgApiKey(h, { key_name: "shop-ci", project_id: "acme-shop" });
    const as = { key: scoped.key };
    const refused: [string, string, string, unknown?][] = [
      ["GET", "/projects/{project_id}", "/projects/acme-blog"],
      ["PATCH", "/projects/{project_id}", "/projects/acme-blog", { project: { name: "mine" } }],
      ["GET", "/projects/{project_id}/endpoints", "/projects/acme-blog/endpoints"],
      ["GET", "/projects/{project_id}/operations", "/projects/acme-blog/operations"],
      ["GET", "/projects/{project_id}/permissions", "/projects/acme-blog/permissions"],
      ["GET", "/projects/{project_id}", "/projects/other-project"],
      ["GET", "/projects/{project_id}", "/projects/no-such-project"],
      ["POST", "/projects/{project_id}/recover", "/projects/acme-blog/recover"],
      ["POST", "/projects", "/projects", { project: { name: "new" } }],
      ["GET", "/projects/shared", "/projects/shared"],
      ["GET", "/api_keys", "/api_keys"],
      ["POST", "/api_keys", "/api_keys", { key_name: "more" }],
      ["GET", "/users/me", "/users/me"],
      ["GET", K, acmeKeys],
      ["POST", K, acmeKeys, { key_name: "more" }],
      ["DELETE", `${K}/{key_id}`, `${acmeKeys}/${scoped.id}`],
      ["GET", "/regions", "/regions"],
    ];
    for (const [method, template, path, body] of refused) {
      const res = await conforming(h, method, template, path, body, as);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.message, `${method} ${path}`).toMatch(/project-scoped.*outside the project acme-shop/);
    }
    // Another organization's project stays out of every list, the org_id too.
    expect(
      (await conforming(h, "GET", "/projects", "/projects?org_id=org-other", undefined, as)).status,
    ).toBe(404);
    // Its own project: visible, so a refused deletion is 403, never "already gone".
    const deleted = await conforming(
      h,
      "DELETE",
      "/projects/{project_id}",
      "/projects/acme-shop",
      undefined,
      as,
    );
    expect(deleted.status).toBe(403);
    expect((await h.api("GET", "/projects/acme-shop", undefined, as)).status).toBe(200);
  });

  it("fails with 401 everywhere once revoked, as the organization's own key does", async () => {
    const h = await startHarness({ seed: acme });
    const scoped = await orgApiKey(h, { key_name: "shop-ci", project_id: "acme-shop" });
    const other = await orgApiKey(h, { key_name: "org-wide" });
    const revoked = await conforming(h, "DELETE", `${K}/{key_id}`, `${acmeKeys}/${scoped.id}`, undefined, {
      key: adaKey,
    });
    expect(revoked.body).toMatchObject({ id: scoped.id, revoked: true, project_id: "acme-shop" });
    // The organization's own key revokes too.
    expect(
      (await conforming(h, "DELETE", `${K}/{key_id}`, `${acmeKeys}/${other.id}`, undefined, { key: orgKey }))
        .status,
    ).toBe(200);
    for (const key of [scoped.key, other.key]) {
      for (const path of ["/projects/acme-shop", "/projects", "/auth"]) {
        const res = await h.api("GET", path, undefined, { key });
        expect(res.status, path).toBe(401);
        expect(JSON.stringify(res.body)).not.toContain(key);
      }
    }
    const listed = await conforming(h, "GET", K, acmeKeys, undefined, { key: adaKey });
    expect(listed.body.map((k: { name: string }) => k.name)).toEqual(["acme-ci"]);
    // Revoking it again, or another organization's key, is 404.
    expect(
      (await conforming(h, "DELETE", `${K}/{key_id}`, `${acmeKeys}/${scoped.id}`, undefined, { key: adaKey }))
        .status,
    ).toBe(404);
  });
});

describe("an organization's keys and projects", () => {
  it("only an admin's personal key creates keys; the organization's key and a member are refused (403), strangers do not see it (404)", async () => {
    const h = await startHarness({ seed: acme });
    const list = await conforming(h, "GET", K, acmeKeys, undefined, { key: orgKey });
    expect(list.body).toEqual([
      expect.objectContaining({ name: "acme-ci", created_by: expect.objectContaining({ name: "Ada" }) }),
    ]);
    const byOrg = await conforming(h, "POST", K, acmeKeys, { key_name: "x" }, { key: orgKey });
    expect(byOrg.status).toBe(403);
    // Nor personal keys: an organization has none to make, list or revoke.
    const personal: [string, string, unknown][] = [
      ["POST", "/api_keys", { key_name: "x" }],
      ["GET", "/api_keys", undefined],
      ["DELETE", `/api_keys/${list.body[0].id}`, undefined],
    ];
    for (const [method, path, body] of personal) {
      const refused = await h.api(method, path, body, { key: orgKey });
      expect(refused.status, `${method} ${path}`).toBe(403);
      expect(refused.body.message).toContain("organization API key");
    }
    for (const method of ["GET", "POST"]) {
      const body = method === "POST" ? { key_name: "x" } : undefined;
      const byMember = await conforming(h, method, K, acmeKeys, body, { key: maxKey });
      expect(byMember.status, method).toBe(403);
    }
    const stranger = (await h.admin("POST", "/accounts", { account: { email: "eve@example.com" } })).body
      .api_key;
    for (const key of [otherKey, stranger as string]) {
      expect((await conforming(h, "GET", K, acmeKeys, undefined, { key })).status).toBe(404);
    }
    // The project must be the organization's, its id well formed, the name at most 64 characters.
    const bad: [unknown, number][] = [
      [{ key_name: "x", project_id: "other-project" }, 404],
      [{ key_name: "x", project_id: "Not_An_Id" }, 400],
      [{ key_name: "x".repeat(65) }, 400],
      [{}, 400],
    ];
    for (const [body, status] of bad) {
      expect(
        (await conforming(h, "POST", K, acmeKeys, body, { key: adaKey })).status,
        JSON.stringify(body),
      ).toBe(status);
    }
    const created = await orgApiKey(h, { key_name: "org-wide" });
    expect(created).not.toHaveProperty("project_id");
    // An organization's key reaches every project of the organization.
    const projects = (await h.api("GET", "/projects", undefined, { key: created.key })).body.projects;
    expect(projects.map((p: { id: string }) => p.id)).toEqual(["acme-blog", "acme-shop"]);
  });

  it("a member's personal key works in the organization's projects but does not delete them; an admin's does", async () => {
    const h = await startHarness({ seed: acme });
    const asMax = { key: maxKey };
    const listed = await conforming(h, "GET", "/projects", "/projects?org_id=org-acme", undefined, asMax);
    expect(listed.body.projects.map((p: { id: string }) => p.id)).toEqual(["acme-blog", "acme-shop"]);
    const renamed = await h.api("PATCH", "/projects/acme-blog", { project: { name: "journal" } }, asMax);
    expect(renamed.body.project).toMatchObject({ name: "journal" });
    expect(
      (await conforming(h, "DELETE", "/projects/{project_id}", "/projects/acme-blog", undefined, asMax))
        .status,
    ).toBe(403);
    expect(
      (
        await conforming(h, "DELETE", "/projects/{project_id}", "/projects/acme-blog", undefined, {
          key: adaKey,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await conforming(
          h,
          "POST",
          "/projects/{project_id}/recover",
          "/projects/acme-blog/recover",
          undefined,
          asMax,
        )
      ).status,
    ).toBe(403);
    expect((await h.api("POST", "/projects/acme-blog/recover", undefined, { key: adaKey })).status).toBe(200);
    // A project a member creates in the organization is the organization's: its key sees it.
    const made = await h.api("POST", "/projects", { project: { name: "made", org_id: "org-acme" } }, asMax);
    expect(made.body.project).toMatchObject({ owner_id: "org-acme", org_id: "org-acme" });
    const seen = (await h.api("GET", "/projects", undefined, { key: orgKey })).body.projects;
    expect(seen.map((p: { id: string }) => p.id)).toContain(made.body.project.id);
    // Another organization's projects stay unknown to both.
    expect((await h.api("GET", "/projects/other-project", undefined, asMax)).status).toBe(404);
    expect((await h.api("GET", "/projects/other-project", undefined, { key: orgKey })).status).toBe(404);
  });

  it("creating organization keys has its own limit of 10 a second, below every route's 40", async () => {
    const h = await startHarness({ seed: acme, rateLimits: platformRateLimits });
    const creates = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        h.api("POST", acmeKeys, { key_name: `burst-${i}` }, { key: adaKey }),
      ),
    );
    const statuses = creates.map((r) => r.status);
    // Ten at once, and maybe one more the bucket refilled while the burst was being served.
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(10);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(11);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(4);
    // Other routes keep their own budget.
    expect((await h.api("GET", acmeKeys, undefined, { key: adaKey })).status).toBe(200);
  });

  it("the demo seed's organization owns its projects; its admin's key lists them by org_id", async () => {
    const seed = await loadSeedFile(join(import.meta.dirname, "seeds", "demo.yaml"));
    const h = await startHarness({ seed });
    const mine = (await h.api("GET", "/projects")).body.projects;
    expect(mine.map((p: { id: string; org_id: string }) => [p.id, p.org_id])).toEqual([
      ["demo-analytics", "org-demo"],
      ["demo-shop", "org-demo"],
    ]);
    const [, user] = [...h.emulator.bootstrapKeys.values()];
    const listed = await h.api("GET", "/projects?org_id=org-demo", undefined, { key: user! });
    expect(listed.body.projects).toHaveLength(2);
    const scoped = await h.api(
      "POST",
      "/organizations/org-demo/api_keys",
      { key_name: "shop", project_id: "demo-shop" },
      { key: user! },
    );
    expect(scoped.body.project_id).toBe("demo-shop");
  });
});

describe("the state file", () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });

  it("keeps organization keys with their scope, memberships and permissions across a restart", async () => {
    const dir = await mkdtemp(join(tmpdir(), "emulator-access-"));
    dirs.push(dir);
    const options = { stateFile: join(dir, "world.json"), rateLimits: false as const, seed: acme };
    const call = async (url: string, key: string, method = "GET", body?: unknown) => {
      const res = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const first = await startEmulator(options);
    const scoped = (
      await call(`${first.url}/organizations/org-acme/api_keys`, adaKey, "POST", {
        key_name: "shop",
        project_id: "acme-shop",
      })
    ).body;
    const granted = await call(`${first.url}/projects/acme-blog/permissions`, maxKey, "POST", {
      email: "eve@example.com",
    });
    expect(granted.status).toBe(200);
    await first.close();

    const second = await startEmulator(options);
    try {
      const key = scoped["key"] as string;
      expect((await call(`${second.url}/projects/acme-shop`, key)).status).toBe(200);
      expect((await call(`${second.url}/projects/acme-blog`, key)).status).toBe(404);
      const keys = (await call(`${second.url}/organizations/org-acme/api_keys`, adaKey)).body as unknown as {
        name: string;
        project_id?: string;
      }[];
      expect(keys.find((k) => k.name === "shop")?.project_id).toBe("acme-shop");
      // Max is still a member (no deletion), and the grant still stands.
      expect((await call(`${second.url}/projects/acme-blog`, maxKey, "DELETE")).status).toBe(403);
      const permissions = (await call(`${second.url}/projects/acme-blog/permissions`, maxKey)).body;
      expect(permissions["project_permissions"]).toEqual([granted.body]);
    } finally {
      await second.close();
    }
  });
});
