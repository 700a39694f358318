// Branching from the past and from the schema alone, as a user notices it: the rows a branch from
// a timestamp or an LSN holds are exactly those written before that point; a schema-only branch has
// the tables, indexes, constraints and sequences and no row; a point outside the restore window is
// refused naming the field.
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness, type Reply } from "../../test/emulator/harness.ts";
import { connectBranch, itemNames as names, momentBetween } from "../../test/emulator/postgres.ts";

const P = "/projects/demo-project";

/** A branch of main with a read-write endpoint, created and started. */
async function branch(
  h: Harness,
  fields: Record<string, unknown>,
): Promise<{ id: string; body: Reply["body"] }> {
  const created = await h.api("POST", `${P}/branches`, {
    branch: fields,
    endpoints: [{ type: "read_write" }],
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  h.clock.advance(5000);
  return { id: created.body.branch.id as string, body: created.body };
}

const iso = (ms: number): string => new Date(ms).toISOString();

describe("branches from a point in the past", () => {
  it("a branch from a timestamp or an LSN has exactly the rows written before it", async () => {
    const h = await startHarness();
    const main = await connectBranch(h, "demo-project");
    const between = await momentBetween(
      h,
      main,
      "create table items (id serial primary key, name text not null unique); insert into items (name) values ('first'), ('second')",
      "insert into items (name) values ('after'); delete from items where name = 'first'",
    );
    h.clock.advance(1000);

    const byTime = await branch(h, { name: "by-time", parent_timestamp: iso(between) });
    expect(byTime.body.branch).toMatchObject({ parent_timestamp: iso(between).replace(/\.\d+Z$/, "Z") });
    const lsn = byTime.body.branch.parent_lsn as string;
    expect(lsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    expect(await names(await connectBranch(h, "demo-project", byTime.id))).toEqual(["first", "second"]);

    const byLsn = await branch(h, { name: "by-lsn", parent_lsn: lsn });
    expect(byLsn.body.branch.parent_lsn).toBe(lsn);
    expect(await names(await connectBranch(h, "demo-project", byLsn.id))).toEqual(["first", "second"]);

    // From now: every change so far, and a later LSN than the earlier point.
    const now = await branch(h, { name: "from-now" });
    expect(await names(await connectBranch(h, "demo-project", now.id))).toEqual(["second", "after"]);
    expect(now.body.branch.parent_lsn).not.toBe(lsn);

    // The parent goes on as it was.
    expect(await names(main)).toEqual(["second", "after"]);
  });

  it("the history reaches across the database stopping when idle and starting again", async () => {
    const h = await startHarness({ postgres: { idleMs: 20 } });
    const first = await connectBranch(h, "demo-project");
    const inFirstRun = await momentBetween(
      h,
      first,
      "create table items (id serial primary key, name text); insert into items (name) values ('run 1')",
      "insert into items (name) values ('run 1, later')",
    );
    await first.end();
    await expect.poll(async () => (await h.admin("GET", "/stats")).body.postgres.databases_running).toBe(0);
    h.clock.advance(10_000);
    const betweenRuns = h.clock.now();
    h.clock.advance(10_000);
    const second = await connectBranch(h, "demo-project");
    await second.query("insert into items (name) values ('run 2')");
    h.clock.advance(1000);

    const early = await branch(h, { name: "early", parent_timestamp: iso(inFirstRun) });
    expect(await names(await connectBranch(h, "demo-project", early.id))).toEqual(["run 1"]);
    const middle = await branch(h, { name: "middle", parent_timestamp: iso(betweenRuns) });
    expect(await names(await connectBranch(h, "demo-project", middle.id))).toEqual(["run 1", "run 1, later"]);
    expect(await names(second)).toEqual(["run 1", "run 1, later", "run 2"]);
  });

  it("a root branch restored to its own past holds the rows of then; its old state is kept under a name", async () => {
    const h = await startHarness();
    const { main } = await branchesOf(h);
    const db = await connectBranch(h, "demo-project");
    const point = await momentBetween(
      h,
      db,
      "create table items (id serial primary key, name text); insert into items (name) values ('kept')",
      "insert into items (name) values ('mistake')",
    );
    h.clock.advance(1000);

    const unnamed = await h.api("POST", `${P}/branches/${main}/restore`, {
      source_branch_id: main,
      source_timestamp: iso(point),
    });
    expect(unnamed.status).toBe(400);
    const restored = await h.api("POST", `${P}/branches/${main}/restore`, {
      source_branch_id: main,
      source_timestamp: iso(point),
      preserve_under_name: "main-before-restore",
    });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    h.clock.advance(10_000);
    expect(await names(await connectBranch(h, "demo-project"))).toEqual(["kept"]);
    const { "main-before-restore": preserved } = await branchesOf(h);
    const copy = await h.api("POST", `${P}/branches`, {
      branch: { parent_id: preserved },
      endpoints: [{ type: "read_write" }],
    });
    h.clock.advance(5000);
    expect(await names(await connectBranch(h, "demo-project", copy.body.branch.id))).toEqual([
      "kept",
      "mistake",
    ]);
  });

  it("a point before the restore window, before the parent existed, or in the future is refused naming the field", async () => {
    const h = await startHarness();
    const { main } = await branchesOf(h);
    const mainRecord = (await h.api("GET", `${P}/branches/${main}`)).body.branch;
    const before = Date.parse(mainRecord.created_at) - 60_000;
    const early = await h.api("POST", `${P}/branches`, { branch: { parent_timestamp: iso(before) } });
    expect(early.status).toBe(400);
    expect(early.body.message).toMatch(/^branch\.parent_timestamp: .* is outside the restore window/);
    expect(early.body.message).toContain("less than latest GC cutoff");

    const future = await h.api("POST", `${P}/branches`, {
      branch: { parent_timestamp: iso(h.clock.now() + 60_000) },
    });
    expect(future.status).toBe(400);
    expect(future.body.message).toMatch(/^branch\.parent_timestamp: .* is in the future/);

    const ahead = await h.api("POST", `${P}/branches`, { branch: { parent_lsn: "FF/0" } });
    expect(ahead.status).toBe(400);
    expect(ahead.body.message).toMatch(/^branch\.parent_lsn: FF\/0 is ahead of branch/);
    const malformed = await h.api("POST", `${P}/branches`, { branch: { parent_lsn: "yesterday" } });
    expect(malformed.body.message).toMatch(/^branch\.parent_lsn: must be an LSN/);
    const both = await h.api("POST", `${P}/branches`, {
      branch: { parent_lsn: "0/1", parent_timestamp: iso(h.clock.now()) },
    });
    expect(both.status).toBe(400);

    // A shorter retention moves the window's start: a point ten minutes ago is out of it.
    h.clock.advance(20 * 60_000);
    const patched = await h.api("PATCH", P, { project: { history_retention_seconds: 300 } });
    expect(patched.status).toBe(200);
    h.clock.advance(5000);
    const old = await h.api("POST", `${P}/branches`, {
      branch: { parent_timestamp: iso(h.clock.now() - 600_000) },
    });
    expect(old.status).toBe(400);
    expect(old.body.message).toContain("history_retention_seconds: 300");
    const recent = await h.api("POST", `${P}/branches`, {
      branch: { parent_timestamp: iso(h.clock.now() - 60_000) },
    });
    expect(recent.status).toBe(201);
  });
});

describe("schema-only branches", () => {
  it("have the parent's tables, indexes, constraints and sequences, and no row", async () => {
    const h = await startHarness();
    const main = await connectBranch(h, "demo-project");
    await main.query(`
      create table customers (id serial primary key, email text not null unique);
      create table orders (id bigserial primary key, customer_id int not null references customers (id),
                           total numeric check (total >= 0));
      create index orders_total on orders (total);
      create sequence invoice_numbers start 100;
      insert into customers (email) values ('a@example.com'), ('b@example.com');
      insert into orders (customer_id, total) values (1, 10), (2, 20);
      select nextval('invoice_numbers');`);
    h.clock.advance(1000);
    const copy = await branch(h, { name: "schema", init_source: "schema-only" });
    expect(copy.body.branch.init_source).toBe("schema-only");
    expect(copy.body.branch.parent_id).toBeUndefined();
    const schema = await connectBranch(h, "demo-project", copy.id);

    const shape = async (client: pg.Client) => ({
      tables: (
        await client.query(
          "select table_name from information_schema.tables where table_schema = 'public' order by 1",
        )
      ).rows,
      indexes: (
        await client.query(
          "select indexname, indexdef from pg_indexes where schemaname = 'public' order by 1",
        )
      ).rows,
      constraints: (
        await client.query(
          "select conname, pg_get_constraintdef(oid) as def from pg_constraint where connamespace = 'public'::regnamespace order by 1",
        )
      ).rows,
      sequences: (
        await client.query("select sequencename from pg_sequences where schemaname = 'public' order by 1")
      ).rows,
    });
    expect(await shape(schema)).toEqual(await shape(main));
    for (const table of ["customers", "orders"]) {
      expect((await schema.query(`select count(*)::int as n from ${table}`)).rows).toEqual([{ n: 0 }]);
      expect((await main.query(`select count(*)::int as n from ${table}`)).rows).toEqual([{ n: 2 }]);
    }
    // Sequences start over, as a schema restored into an empty database does.
    expect((await schema.query("select nextval('invoice_numbers')::int as n")).rows).toEqual([{ n: 100 }]);
    await schema.query("insert into customers (email) values ('c@example.com')");
    expect((await schema.query("select id from customers")).rows).toEqual([{ id: 1 }]);
  });
});
