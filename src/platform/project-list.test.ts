// The account's projects as one shared list: one request serves every reader within the age they
// accept, and this operator's own creates and deletes show at once, without a new list.
import { describe, expect, it } from "vitest";
import { ProjectList } from "./project-list.ts";
import type { Project } from "./project-schemas.ts";

const project = (id: string, orgId?: string) => ({ id, name: id, orgId }) as unknown as Project;

describe("the account's project list", () => {
  it("is listed once for every reader within the age they accept, and again past it", async () => {
    let now = 0;
    const list = new ProjectList(() => now);
    let sent = 0;
    const lister = () => {
      sent++;
      return Promise.resolve([project("p-1")]);
    };
    await Promise.all([list.get(undefined, lister, "a", 30_000), list.get(undefined, lister, "b", 30_000)]);
    now = 10_000;
    await list.get(undefined, lister, "a", 30_000);
    expect(sent).toBe(1);
    now = 40_000;
    await list.get(undefined, lister, "a", 30_000);
    expect(sent).toBe(2);
  });

  it("shows this operator's creates and hides its deletes, even of a list still in flight", async () => {
    const list = new ProjectList(() => 0);
    let answer: (projects: Project[]) => void = () => undefined;
    const first = list.get(undefined, () => new Promise((resolve) => (answer = resolve)), "a", 30_000);
    list.created(project("p-new"));
    list.deleted("p-old");
    answer([project("p-old"), project("p-1")]);
    expect((await first).map((p) => p.id)).toEqual(["p-1", "p-new"]);
    const later = await list.get(undefined, () => Promise.reject(new Error("not listed again")), "a", 30_000);
    expect(later.map((p) => p.id)).toEqual(["p-1", "p-new"]);
  });

  it("keeps one list per organization: a create shows in its own organization's list only", async () => {
    const list = new ProjectList(() => 0);
    await list.get("org-a", () => Promise.resolve([]), "a", 30_000);
    await list.get("org-b", () => Promise.resolve([]), "a", 30_000);
    list.created(project("p-a", "org-a"));
    const a = await list.get("org-a", () => Promise.reject(new Error("no")), "a", 30_000);
    const b = await list.get("org-b", () => Promise.reject(new Error("no")), "a", 30_000);
    expect(a.map((p) => p.id)).toEqual(["p-a"]);
    expect(b).toEqual([]);
  });
});
