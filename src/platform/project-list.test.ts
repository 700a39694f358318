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

describe("whether to list the account rather than read a project alone", () => {
  it("lists once as many projects as the list has pages are asked about within the window", async () => {
    let now = 0;
    const list = new ProjectList(() => now);
    // Nothing listed yet: one page is assumed, so the first project asked about is worth it.
    expect(list.worthListing("p-0", 60_000)).toBe(true);
    // An account of 1,200 projects: three pages; one Project alone reads its own.
    await list.get(
      undefined,
      () => Promise.resolve(Array.from({ length: 1_200 }, (_, i) => project(`p-${i}`))),
      "a",
      0,
    );
    now = 120_000;
    expect(list.worthListing("p-1", 60_000)).toBe(false);
    expect(list.worthListing("p-2", 60_000)).toBe(false);
    expect(list.worthListing("p-3", 60_000)).toBe(true);
    // Asked about long ago does not count.
    now = 240_000;
    expect(list.worthListing("p-4", 60_000)).toBe(false);
  });
});
