// Project sharing as code (issue 33): a Project shares its project with users by e-mail, as the
// console does; addresses added are granted, dropped ones revoked, a grant made elsewhere kept
// (unless the list is exclusive), a grant revoked elsewhere made again; the invited user's key
// sees the project among those shared with it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlatformClient } from "../../src/platform/index.ts";
import { startOperatorHarness, testSeed, type OperatorHarness } from "../support/operator.ts";
import { factory, project, until, type ProjectObject } from "./scenario.ts";

const ann = "0d9b6f52-6a41-4f0e-8d6c-5f2a1b3c4d5e";
let h: OperatorHarness;
let annsKey: PlatformClient;
const read = () => h.get<ProjectObject>("project", "shop");
const emails = async (id: string) =>
  (await h.platform.listProjectPermissions(id))
    .filter((p) => p.revokedAt === undefined)
    .map((p) => p.grantedToEmail)
    .sort();
const sharedWithAnn = async () => (await annsKey.listSharedProjects()).map((p) => p.id);

beforeAll(async () => {
  h = await startOperatorHarness(factory, {
    prefix: "share",
    emulator: {
      seed: {
        ...testSeed,
        accounts: [{ account: { id: ann, name: "Ann", email: "ann@example.com" } }],
      },
    },
  });
  annsKey = new PlatformClient({ baseUrl: h.emulator.url, apiKey: h.emulator.bootstrapKeys.get(ann) ?? "" });
  await h.start();
});

afterAll(async () => {
  await annsKey?.close();
  await h?.stop();
});

describe("a Project's collaborators", () => {
  let id = "";

  it("are granted: the invited user's key sees the project", async () => {
    await h.apply(project("shop", { collaborators: { emails: ["ann@example.com", "bob@example.com"] } }));
    const made = await until(read, "True", { check: (o) => (o.status?.collaborators?.length ?? 0) === 2 });
    id = made.status?.projectId ?? "";
    expect(await emails(id)).toEqual(["ann@example.com", "bob@example.com"]);
    expect(await sharedWithAnn()).toContain(id);
  });

  it("keep a grant made elsewhere, take back one dropped from the list, and make one revoked elsewhere again", async () => {
    await h.platform.grantProjectPermission(id, "eve@example.com");
    const anns = (await h.platform.listProjectPermissions(id)).find(
      (p) => p.grantedToEmail === "ann@example.com",
    );
    await h.platform.revokeProjectPermission(id, anns?.id ?? "");
    await h.apply(
      project(
        "shop",
        { collaborators: { emails: ["ann@example.com"] } },
        { "neoncloud.dev/observeInterval": "1s" },
      ),
    );
    await until(read, "True", { check: (o) => o.status?.collaborators?.join() === "ann@example.com" });
    await expect.poll(() => emails(id), { timeout: 30_000 }).toEqual(["ann@example.com", "eve@example.com"]);
    expect(await sharedWithAnn()).toContain(id);
  });

  it("exclusive: the list is the whole of the project's sharing", async () => {
    await h.apply(
      project(
        "shop",
        { collaborators: { emails: [], exclusive: true } },
        { "neoncloud.dev/observeInterval": "1s" },
      ),
    );
    await expect.poll(() => emails(id), { timeout: 30_000 }).toEqual([]);
    await until(read, "True", { check: (o) => (o.status?.collaborators ?? []).length === 0 });
    expect(await sharedWithAnn()).not.toContain(id);
  });
});
