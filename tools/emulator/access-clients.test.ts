// The official clients share projects and manage an organization's keys against the emulator
// unchanged: @neondatabase/api-client's typed methods, and neonctl's `api-keys` with a project
// scope (it looks the organization up from the project and checks the key came back scoped).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApiClient } from "@neondatabase/api-client";
import { describe, expect, it } from "vitest";
import { startHarness } from "../../test/emulator/harness.ts";
import { neonctlFor } from "../../test/emulator/neonctl.ts";
import { acmeSeed, adaKey } from "../../test/emulator/organization.ts";

const seed = acmeSeed([
  { id: "acme-shop", name: "shop" },
  { id: "acme-blog", name: "blog" },
]);

describe("@neondatabase/api-client", () => {
  it("shares a project and manages organization keys, a project-scoped one included", async () => {
    const h = await startHarness({ seed });
    const bob = (await h.admin("POST", "/accounts", { account: { email: "bob@example.com" } })).body.api_key;
    const ada = createApiClient({ apiKey: adaKey, baseURL: h.emulator.url });
    const asBob = createApiClient({ apiKey: bob as string, baseURL: h.emulator.url });

    const granted = await ada.grantPermissionToProject("acme-shop", { email: "bob@example.com" });
    expect(granted.data.granted_to_email).toBe("bob@example.com");
    expect((await ada.listProjectPermissions("acme-shop")).data.project_permissions).toHaveLength(1);
    expect((await asBob.listSharedProjects({})).data.projects.map((p) => p.id)).toEqual(["acme-shop"]);
    const revoked = await ada.revokePermissionFromProject("acme-shop", granted.data.id);
    expect(revoked.data.revoked_at).toBeDefined();
    expect((await asBob.listSharedProjects({})).data.projects).toEqual([]);

    const created = await ada.createOrgApiKey("org-acme", { key_name: "shop", project_id: "acme-shop" });
    expect(created.data.project_id).toBe("acme-shop");
    const scoped = createApiClient({ apiKey: created.data.key, baseURL: h.emulator.url });
    expect((await scoped.listProjects({})).data.projects.map((p) => p.id)).toEqual(["acme-shop"]);
    await expect(scoped.getProject("acme-blog")).rejects.toMatchObject({ response: { status: 404 } });
    const listed = (await ada.listOrgApiKeys("org-acme")).data;
    expect(listed.find((k) => k.id === created.data.id)?.project_id).toBe("acme-shop");
    expect((await ada.revokeOrgApiKey("org-acme", created.data.id)).data.revoked).toBe(true);
    await expect(scoped.listProjects({})).rejects.toMatchObject({ response: { status: 401 } });
  });
});

describe("neonctl", () => {
  it("creates, lists and revokes a project-scoped key, which lists its project alone", async () => {
    const h = await startHarness({ seed });
    const configDir = await mkdtemp(join(tmpdir(), "neonctl-"));
    try {
      const ada = neonctlFor(h.emulator.url, adaKey, configDir);
      const created = (await ada("api-keys", "create", "--name", "agent", "--project-id", "acme-shop")) as {
        id: number;
        key: string;
        project_id: string;
      };
      expect(created.project_id).toBe("acme-shop");
      const keys = (await ada("api-keys", "list", "--org-id", "org-acme")) as {
        name: string;
        project_id?: string;
      }[];
      expect(keys.find((k) => k.name === "agent")?.project_id).toBe("acme-shop");
      const scoped = neonctlFor(h.emulator.url, created.key, configDir);
      // With an organization named, neonctl lists the projects alone (no shared ones).
      expect(await scoped("projects", "list", "--org-id", "org-acme")).toMatchObject([{ id: "acme-shop" }]);
      await ada("api-keys", "revoke", String(created.id), "--org-id", "org-acme");
      expect((await h.api("GET", "/projects", undefined, { key: created.key })).status).toBe(401);
    } finally {
      await rm(configDir, { recursive: true, force: true });
    }
  });
});
