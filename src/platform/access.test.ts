// Access as code, through the platform client against the emulator over HTTP: a project shared by
// e-mail and taken back, an organization's keys (one scoped to a project) created, listed and
// revoked, and a client whose key is project-scoped working beside the organization's other keys:
// it is the organization's account (one budget), its refusals elsewhere are its own, and nothing
// the account shares fails for it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  fastRetry,
  generousLimits,
  startPlatform,
  type TestPlatform,
} from "../../test/support/platform/platform.ts";
import { acmeSeed, adaKey, orgKey } from "../../test/emulator/organization.ts";
import { Accounts } from "./accounts.ts";
import type { PlatformClient } from "./client.ts";
import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from "./errors.ts";
import { KeyListCache } from "./key-list.ts";

let platform: TestPlatform;
let ada: PlatformClient;

beforeAll(async () => {
  platform = await startPlatform({
    operationDurationMs: 20,
    seed: acmeSeed([
      { id: "acme-shop", name: "shop", branches: [{ id: "br-shop-dev", name: "dev" }] },
      { id: "acme-blog", name: "blog" },
    ]),
  });
  ada = platform.client({ apiKey: adaKey });
});

afterAll(async () => {
  await platform.close();
});

/** A new user of the world (the admin API), as someone a project is shared with. */
async function newUser(email: string): Promise<string> {
  const res = await fetch(`${platform.emulator.adminUrl}/accounts`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ account: { email } }),
  });
  return ((await res.json()) as { api_key: string }).api_key;
}

describe("sharing a project", () => {
  it("grants, lists and revokes; the invited user's client sees it shared, then not", async () => {
    const bob = platform.client({ apiKey: await newUser("bob@example.com") });
    const granted = await ada.grantProjectPermission("acme-blog", "bob@example.com");
    expect(granted).toMatchObject({ grantedToEmail: "bob@example.com", revokedAt: undefined });
    expect(await ada.listProjectPermissions("acme-blog")).toEqual([granted]);
    await expect(ada.grantProjectPermission("acme-blog", "bob@example.com")).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect((await bob.listSharedProjects()).map((p) => p.id)).toEqual(["acme-blog"]);
    expect((await bob.getProject("acme-blog")).orgId).toBe("org-acme");
    // A collaborator works in it but does not delete it.
    await expect(bob.deleteProject("acme-blog")).rejects.toBeInstanceOf(ForbiddenError);

    const revoked = await ada.revokeProjectPermission("acme-blog", granted.id);
    expect(revoked.revokedAt).toEqual(expect.any(String));
    expect(await ada.listProjectPermissions("acme-blog")).toEqual([]);
    expect(await bob.listSharedProjects()).toEqual([]);
    await expect(bob.getProject("acme-blog")).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("an organization's keys", () => {
  it("a project-scoped key works in its project, is refused elsewhere, and fails with 401 once revoked", async () => {
    const created = await ada.createOrgApiKey("org-acme", "shop-ci", { projectId: "acme-shop" });
    expect(created).toMatchObject({ name: "shop-ci", projectId: "acme-shop" });
    const listed = await ada.listOrgApiKeys("org-acme");
    expect(listed.find((k) => k.id === created.id)).toMatchObject({
      name: "shop-ci",
      projectId: "acme-shop",
    });
    expect(listed.find((k) => k.name === "acme-ci")?.projectId).toBeUndefined();

    const scoped = platform.client({ apiKey: created.key });
    expect((await scoped.authDetails()).accountId).toBe("org-acme");
    expect((await scoped.listProjects()).map((p) => p.id)).toEqual(["acme-shop"]);
    expect(await scoped.listEndpoints("acme-shop")).toHaveLength(1);
    const made = await scoped.createEndpoint("acme-shop", { branchId: "br-shop-dev", type: "read_write" });
    expect(made.endpoint.branchId).toBe("br-shop-dev");
    for (const refused of [
      () => scoped.getProject("acme-blog"),
      () => scoped.listEndpoints("acme-blog"),
      () => scoped.listApiKeys(),
      () => scoped.createApiKey("more"),
      () => scoped.listOrgApiKeys("org-acme"),
      () => scoped.listSharedProjects(),
    ]) {
      await expect(refused()).rejects.toBeInstanceOf(NotFoundError);
    }
    await expect(scoped.deleteProject("acme-shop")).rejects.toBeInstanceOf(ForbiddenError);

    const revoked = await ada.revokeOrgApiKey("org-acme", created.id);
    expect(revoked).toMatchObject({ id: created.id, revoked: true, projectId: "acme-shop" });
    await expect(scoped.listProjects()).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(scoped.listEndpoints("acme-shop")).rejects.toBeInstanceOf(UnauthorizedError);
    // No key value in what the clients logged.
    const logs = platform.logLines.join("\n");
    for (const key of [created.key, adaKey, orgKey]) expect(logs).not.toContain(key);
  });

  it("only an admin's personal key creates them: the organization's own key is refused", async () => {
    const organization = platform.client({ apiKey: orgKey });
    await expect(organization.createOrgApiKey("org-acme", "x")).rejects.toBeInstanceOf(ForbiddenError);
    expect((await organization.listOrgApiKeys("org-acme")).map((k) => k.name)).toContain("acme-ci");
  });
});

describe("a project-scoped key beside the organization's keys", () => {
  it("joins the organization's account; its refusals are its own, so the others' reads still succeed", async () => {
    const { key } = await ada.createOrgApiKey("org-acme", "beside", { projectId: "acme-shop" });
    const accounts = new Accounts({
      baseUrl: platform.emulator.url,
      clientOptions: { limits: generousLimits, retry: fastRetry },
    });
    try {
      const organization = await accounts.client(orgKey);
      const scoped = await accounts.client(key);
      expect(scoped.account).toBe(organization.account);
      expect(accounts.knownAccounts).toBe(1);

      // The scoped key lists the blog first; the organization's reader joins that list, is told
      // 404, and lists again with its own key.
      const refused = scoped.snapshot("acme-blog", { maxAgeMs: 60_000 });
      const seen = organization.snapshot("acme-blog", { maxAgeMs: 60_000 });
      await expect(refused).rejects.toBeInstanceOf(NotFoundError);
      expect(await seen).toHaveLength(1);

      // The personal key list: neither may read it, each told in its own words (the scoped key
      // does not see the route, the organization's key has no personal keys).
      const keys = new KeyListCache({ maxAgeMs: 60_000 });
      const notForScoped = keys.get(scoped);
      const notForOrganization = keys.get(organization);
      await expect(notForScoped).rejects.toBeInstanceOf(NotFoundError);
      await expect(notForOrganization).rejects.toBeInstanceOf(ForbiddenError);
    } finally {
      await accounts.close();
    }
  });
});
