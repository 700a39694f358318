// Accounts: who a key belongs to (GET /auth, /users/me, /users/me/organizations),
// several accounts in one world, each seeing only its own projects and keys,
// and each with its own rate budget shared by all of its keys.
import { describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../../test/emulator/harness.ts";
import { responseErrors } from "../../test/emulator/openapi.ts";
import { parseSeed } from "./seed.ts";

const orgKey = "o".repeat(64);

/** The default harness's account, plus an organization with one project of its own. */
const twoAccounts = {
  account: { name: "Ada", email: "ada@example.com" },
  projects: [{ id: "demo-project", name: "demo", org_id: "org-shared-12345678" }],
  accounts: [
    {
      account: { kind: "organization" as const, id: "org-acme-87654321", name: "Acme" },
      bootstrap_key: { name: "acme-ci", key: orgKey },
      projects: [{ id: "acme-project", name: "acme" }],
    },
  ],
};

async function conforming(h: Harness, path: string, key?: string) {
  const res = await h.api("GET", path, undefined, key === undefined ? {} : { key });
  const template = path.split("?")[0] ?? path;
  expect(responseErrors("GET", template, res.status, res.body), `GET ${path} → ${res.status}`).toEqual([]);
  return res;
}

describe("who a key belongs to", () => {
  it("GET /auth names the account of every key of it; /users/me and the projects agree", async () => {
    const h = await startHarness({ seed: twoAccounts });
    const auth = await conforming(h, "/auth");
    expect(auth.body).toEqual({ account_id: expect.any(String), auth_method: "api_key_user" });
    const accountId = auth.body.account_id;
    const me = await conforming(h, "/users/me");
    expect(me.body).toMatchObject({ id: accountId, name: "Ada", email: "ada@example.com" });
    // A user who belongs to an organization names it to list projects, as on the platform.
    const unnamed = await conforming(h, "/projects");
    expect(unnamed).toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/^org_id is required/) },
    });
    const listed = await conforming(h, "/projects?org_id=org-shared-12345678");
    expect(listed.body.projects[0].owner_id).toBe(accountId);
    // A key created later belongs to the same account.
    const created = await h.api("POST", "/api_keys", { key_name: "second" });
    expect(created.body.created_by).toBe(accountId);
    expect((await h.api("GET", "/auth", undefined, { key: created.body.key })).body.account_id).toBe(
      accountId,
    );
    const orgs = await conforming(h, "/users/me/organizations");
    expect(orgs.body.organizations.map((o: { id: string }) => o.id)).toEqual(["org-shared-12345678"]);
  });

  it("an organization's key is api_key_org, has no user, and lists its own organization", async () => {
    const h = await startHarness({ seed: twoAccounts });
    expect(h.emulator.bootstrapKeys.get("org-acme-87654321")).toBe(orgKey);
    expect((await conforming(h, "/auth", orgKey)).body).toEqual({
      account_id: "org-acme-87654321",
      auth_method: "api_key_org",
    });
    const me = await conforming(h, "/users/me", orgKey);
    expect(me.status).toBe(404);
    expect(me.body.message).toMatch(/belongs to an organization/);
    const orgs = await conforming(h, "/users/me/organizations", orgKey);
    expect(orgs.body.organizations).toEqual([
      expect.objectContaining({ id: "org-acme-87654321", name: "Acme" }),
    ]);
    const [project] = (await h.api("GET", "/projects", undefined, { key: orgKey })).body.projects;
    expect(project).toMatchObject({
      id: "acme-project",
      org_id: "org-acme-87654321",
      owner_id: "org-acme-87654321",
    });
  });

  it("under dropDeprecatedFields /users/me has no login, which only the lenient check accepts", async () => {
    const h = await startHarness({ dropDeprecatedFields: true });
    const me = await h.api("GET", "/users/me");
    expect(me.body).not.toHaveProperty("login");
    expect(me.body.auth_accounts[0]).not.toHaveProperty("login");
    expect(responseErrors("GET", "/users/me", 200, me.body, { deprecatedMayBeMissing: true })).toEqual([]);
    expect(responseErrors("GET", "/users/me", 200, me.body).join()).toMatch(/login/);
  });
});

describe("several accounts", () => {
  it("each key sees only its own account's projects and keys; the other's are unknown (404)", async () => {
    const h = await startHarness({ seed: twoAccounts });
    const ids = async (path: string, key?: string) =>
      (await h.api("GET", path, undefined, key === undefined ? {} : { key })).body.projects.map(
        (p: { id: string }) => p.id,
      );
    expect(await ids("/projects?org_id=org-shared-12345678")).toEqual(["demo-project"]);
    expect(await ids("/projects", orgKey)).toEqual(["acme-project"]);
    // Another organization is as unknown as one that does not exist.
    const foreign = await h.api("GET", "/projects?org_id=org-acme-87654321");
    expect(foreign).toMatchObject({
      status: 404,
      body: { message: "organization org-acme-87654321 not found" },
    });
    for (const path of ["/projects/acme-project/endpoints", "/projects/acme-project/operations"]) {
      const res = await h.api("GET", path);
      expect(res.status, path).toBe(404);
      expect(res.body.message).toBe("project not found");
    }
    const [acmeEndpoint] = (
      await h.api("GET", "/projects/acme-project/endpoints", undefined, { key: orgKey })
    ).body.endpoints;
    expect((await h.api("POST", `/projects/acme-project/endpoints/${acmeEndpoint.id}/start`)).status).toBe(
      404,
    );
    const mine = (await h.api("GET", "/api_keys")).body.map((k: { name: string }) => k.name);
    expect(mine).toEqual(["bootstrap"]);
    expect((await h.api("GET", "/api_keys", undefined, { key: orgKey })).status).toBe(403);
    const [acmeKey] = (
      await h.api("GET", "/organizations/org-acme-87654321/api_keys", undefined, { key: orgKey })
    ).body;
    expect(acmeKey.name).toBe("acme-ci");
    expect((await h.api("DELETE", `/api_keys/${acmeKey.id}`)).status).toBe(404);
    expect((await h.api("GET", "/auth", undefined, { key: orgKey })).status).toBe(200); // not revoked
  });

  it("the rate limit is per account: keys of one account share it, another account has its own", async () => {
    const h = await startHarness({ seed: twoAccounts, rateLimits: { perMinute: 4, perRoutePerSecond: 100 } });
    const second = (await h.api("POST", "/api_keys", { key_name: "second" })).body.key as string;
    const statuses: number[] = [];
    for (const key of [h.emulator.bootstrapKey, second, h.emulator.bootstrapKey, second]) {
      statuses.push((await h.api("GET", "/api_keys", undefined, { key })).status);
    }
    // The create took one: four requests of the same account, one over its budget.
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await h.api("GET", "/projects", undefined, { key: orgKey })).status).toBe(200);
  });

  it("a reset brings back every account with the same ids and keys", async () => {
    const h = await startHarness({
      seed: { accounts: [{ account: { kind: "organization" }, projects: [] }] },
    });
    const before = [...h.emulator.bootstrapKeys];
    const auths = async () =>
      Promise.all(
        before.map(async ([, key]) => (await h.api("GET", "/auth", undefined, { key })).body.account_id),
      );
    expect(await auths()).toEqual(before.map(([id]) => id));
    await h.admin("POST", "/reset");
    expect(await auths()).toEqual(before.map(([id]) => id));
  });

  it("a seed with a malformed account id is refused, naming the field", () => {
    expect(() => parseSeed({ accounts: [{ account: { kind: "organization", id: "Org_Acme" } }] })).toThrow(
      /accounts.*account.*id|organization's id/s,
    );
    expect(() => parseSeed({ account: { id: "not-a-uuid" } })).toThrow(/a user's id is a UUID/);
  });
});
