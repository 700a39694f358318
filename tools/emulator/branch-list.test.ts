// The branch list in pages, as the OpenAPI document describes it: a small page without `limit`,
// `pagination.next` until the last page, every branch exactly once in the order asked for, and
// the platform's 400 for a limit or cursor it does not take. Every page is checked against the
// document.
import { describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../../test/emulator/harness.ts";
import type { EmulatorOptions } from "./emulator.ts";
import { conforming } from "../../test/emulator/openapi.ts";

const P = "/projects/demo-project";
const list = "/projects/{project_id}/branches";

interface Page {
  branches: { id: string; name: string }[];
  pagination: { next?: string; sort_by: string; sort_order: string };
}

/** The seeded project (main, dev, staging) with `n` more branches, b00, b01, ... */
async function withBranches(n: number, options: EmulatorOptions = {}): Promise<Harness> {
  const h = await startHarness(options);
  for (let i = 0; i < n; i++) {
    const added = await h.admin("POST", `${P}/branches`, { name: `b${String(i).padStart(2, "0")}` });
    expect(added.status).toBe(201);
    h.clock.advance(1000); // distinct creation times
  }
  return h;
}

/** Every page of a listing, following `pagination.next`. */
async function allPages(h: Harness, query: string): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const q = [query, cursor === undefined ? "" : `cursor=${encodeURIComponent(cursor)}`].filter(Boolean);
    const res = await conforming(h, "GET", list, `${P}/branches?${q.join("&")}`);
    expect(res.status).toBe(200);
    const page = res.body as Page;
    pages.push(page);
    cursor = page.pagination.next;
  } while (cursor !== undefined);
  return pages;
}

describe("the branch list, in pages", () => {
  it("answers a small page without limit, and a client that follows next sees every branch once", async () => {
    const h = await withBranches(12);
    const first = (await conforming(h, "GET", list, `${P}/branches`)).body as Page;
    expect(first.branches).toHaveLength(10);
    expect(first.pagination).toMatchObject({
      next: expect.any(String),
      sort_by: "updated_at",
      sort_order: "desc",
    });
    const pages = await allPages(h, "");
    expect(pages.map((p) => p.branches.length)).toEqual([10, 5]);
    const ids = pages.flatMap((p) => p.branches.map((b) => b.id));
    expect(new Set(ids).size).toBe(15);
    // Newest change first by default: the last branch added leads.
    expect(pages[0]?.branches[0]?.name).toBe("b11");
  });

  it("sorts by name or creation time in either order, and takes a limit up to 10,000", async () => {
    const h = await withBranches(4);
    const byName = await allPages(h, "sort_by=name&sort_order=asc&limit=3");
    expect(byName.map((p) => p.branches.map((b) => b.name))).toEqual([
      ["b00", "b01", "b02"],
      ["b03", "dev", "main"],
      ["staging"],
    ]);
    const oldest = await allPages(h, "sort_by=created_at&sort_order=asc&limit=10000");
    expect(oldest).toHaveLength(1);
    expect(oldest[0]?.branches.at(-1)?.name).toBe("b03");
    expect(oldest[0]?.pagination.next).toBeUndefined();
  });

  it("may answer fewer than limit: a client stops on a missing next, not on a short page", async () => {
    const h = await withBranches(2, { branchPageMax: 2 });
    const pages = await allPages(h, "sort_by=created_at&sort_order=asc&limit=100");
    expect(pages.map((p) => p.branches.length)).toEqual([2, 2, 1]);
  });

  it("refuses a limit out of range and a cursor that is not one of its own, naming the parameter", async () => {
    const h = await withBranches(0);
    for (const query of ["limit=0", "limit=10001", "sort_by=size", "sort_order=up"]) {
      const res = await h.api("GET", `${P}/branches?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.message).toContain(query.split("=")[0]);
    }
    const bad = await h.api("GET", `${P}/branches?cursor=nonsense`);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("cursor");
    const next = ((await h.api("GET", `${P}/branches?limit=1`)).body as Page).pagination.next ?? "";
    const otherOrder = await h.api("GET", `${P}/branches?sort_by=name&cursor=${encodeURIComponent(next)}`);
    expect(otherOrder.status).toBe(400);
    expect(otherOrder.body.message).toContain("sort_by");
  });
});
