// Operations: reading them, paging through them, the branch (or project) lock
// while one runs, the control plane's periodic checks, and bounded retention.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";

const P = "/projects/demo-project";

/** Makes `n` operations on the seeded endpoint (start/suspend alternating), each finished. */
async function makeOperations(h: Harness, n: number): Promise<string[]> {
  const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await h.api("POST", `${P}/endpoints/${seeded.id}/${i % 2 === 0 ? "start" : "suspend"}`);
    expect(res.status).toBe(200);
    ids.push(res.body.operations[0].id);
    h.clock.advance(1000);
  }
  return ids;
}

describe("operations", () => {
  it("pages newest first with limit and a microsecond cursor, which is there even on the last short page", async () => {
    const h = await startHarness();
    const ids = await makeOperations(h, 5);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 3; page++) {
      const query = cursor === undefined ? "limit=2" : `limit=2&cursor=${encodeURIComponent(cursor)}`;
      const res = await h.api("GET", `${P}/operations?${query}`);
      expect(res.status).toBe(200);
      expect(res.body.pagination.cursor).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/);
      seen.push(...res.body.operations.map((o: { id: string }) => o.id));
      cursor = res.body.pagination.cursor;
    }
    expect(seen).toEqual([...ids].reverse());
    const after = await h.api("GET", `${P}/operations?limit=2&cursor=${encodeURIComponent(cursor!)}`);
    expect(after.body.operations).toEqual([]);
    expect(after.body.pagination.cursor).toEqual(expect.any(String));
  });

  it("operations created in the same millisecond are neither skipped nor repeated across pages", async () => {
    const h = await startHarness({ operationDurationMs: 0 });
    const { dev, staging } = await branchesOf(h);
    // With a stopped clock every operation shares one millisecond.
    const ids: string[] = [];
    for (const branch of [dev, staging]) {
      for (const type of ["read_write", "read_only", "read_only"]) {
        const res = await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: branch, type } });
        ids.push(res.body.operations[0].id); // zero-length operations: the next request finds it finished
      }
    }
    const seen: string[] = [];
    let cursor = "";
    for (;;) {
      const res = await h.api(
        "GET",
        `${P}/operations?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      if (res.body.operations.length === 0) break;
      seen.push(...res.body.operations.map((o: { id: string }) => o.id));
      cursor = res.body.pagination.cursor;
    }
    expect(seen).toEqual([...ids].reverse());
  });

  it("while an operation runs, every mutation in the project gets 423, in another branch too; afterwards they succeed", async () => {
    const h = await startHarness();
    const { dev, staging } = await branchesOf(h);
    const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    const onStaging = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: staging, type: "read_write", disabled: true },
    }); // disabled: no operation, so the project is still free
    expect(onStaging.status).toBe(201);
    const first = await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write" } });
    expect(first.status).toBe(201);
    const S = `${P}/endpoints/${onStaging.body.endpoint.id}`;
    const attempts = [
      await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_only" } }),
      await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: staging, type: "read_only" } }),
      await h.api("PATCH", S, { endpoint: { autoscaling_limit_max_cu: 2 } }),
      await h.api("POST", `${P}/endpoints/${seeded.id}/start`),
      await h.api("POST", `${P}/endpoints/${seeded.id}/restart`),
      await h.api("DELETE", S),
    ];
    for (const locked of attempts) {
      expect(locked.status).toBe(423);
      expect(locked.body.message).toMatch(/conflicting operations/);
    }
    // Nothing was applied by the refused requests.
    expect((await h.api("GET", `${P}/endpoints`)).body.endpoints).toHaveLength(3);
    h.clock.advance(1000);
    const later = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: staging, type: "read_only" },
    });
    expect(later.status).toBe(201);
  });

  it("with lockScope branch (the optimistic variant), only the busy branch is locked", async () => {
    const h = await startHarness({ lockScope: "branch" });
    const { dev, staging } = await branchesOf(h);
    const first = await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write" } });
    expect(first.status).toBe(201);
    const locked = await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_only" } });
    expect(locked.status).toBe(423);
    const beside = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: staging, type: "read_write" },
    });
    expect(beside.status).toBe(201);
    // A move onto a busy branch is refused too.
    const move = await h.api("PATCH", `${P}/endpoints/${first.body.endpoint.id}`, {
      endpoint: { branch_id: staging },
    });
    expect([409, 423]).toContain(move.status);
    h.clock.advance(1000);
    const later = await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_only" } });
    expect(later.status).toBe(201);
  });

  it("check_availability runs periodically for branches that have endpoints, and only those", async () => {
    const h = await startHarness({ checkAvailabilityIntervalMs: 3600_000 });
    const { main } = await branchesOf(h);
    h.clock.advance(3600_000);
    const ops = (await h.api("GET", `${P}/operations?limit=100`)).body.operations;
    expect(ops).toEqual([expect.objectContaining({ action: "check_availability", branch_id: main })]);
    h.clock.advance(3600_000);
    const again = (await h.api("GET", `${P}/operations?limit=100`)).body.operations;
    expect(again.filter((o: { action: string }) => o.action === "check_availability")).toHaveLength(2);
  });

  it("old operations are forgotten beyond the retention cap, newest kept", async () => {
    const h = await startHarness({ maxOperationsPerProject: 10 });
    const ids = await makeOperations(h, 30);
    const kept = (await h.api("GET", `${P}/operations?limit=1000`)).body.operations.map(
      (o: { id: string }) => o.id,
    );
    expect(kept.length).toBeLessThanOrEqual(11);
    expect(kept.length).toBeGreaterThanOrEqual(10);
    expect(kept.slice(0, 10)).toEqual(ids.slice(-10).reverse());
    expect((await h.api("GET", `${P}/operations/${ids[0]}`)).status).toBe(404);
  });

  it("limit outside 1..1000 and a malformed cursor are refused with 400", async () => {
    const h = await startHarness();
    for (const query of ["limit=0", "limit=1001", "limit=abc", "cursor=yesterday"]) {
      expect((await h.api("GET", `${P}/operations?${query}`)).status, query).toBe(400);
    }
  });
});
