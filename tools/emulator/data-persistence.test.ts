// The state file keeps a branch's history, its snapshots, its masking rules and its backup
// schedule: after a restart a snapshot restores the rows it was taken with, and a branch from a
// point before the restart holds the rows of then.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { Reply } from "../../test/emulator/harness.ts";
import { createManualClock } from "./clock.ts";
import { startEmulator, type Emulator } from "./emulator.ts";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const P = "/projects/kept";

async function call(e: Emulator, method: string, path: string, body?: unknown): Promise<Reply> {
  const res = await fetch(`${e.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${e.bootstrapKey}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** Runs `sql` on the branch's database (default: the default branch) and answers the rows. */
async function query(e: Emulator, sql: string, branchId?: string): Promise<Record<string, unknown>[]> {
  const branch = branchId === undefined ? "" : `&branch_id=${branchId}`;
  const uri = (
    await call(e, "GET", `${P}/connection_uri?database_name=neondb&role_name=neondb_owner${branch}`)
  ).body.uri as string;
  const client = new pg.Client({ connectionString: uri });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe("the state file keeps the data routes' state", () => {
  it("a restarted emulator keeps the history, snapshots, masking rules and backup schedules", async () => {
    const dir = await mkdtemp(join(tmpdir(), "emulator-data-state-"));
    dirs.push(dir);
    const clock = createManualClock();
    const options = {
      clock,
      stateFile: join(dir, "world.json"),
      rateLimits: false as const,
      seed: { projects: [{ id: "kept", name: "kept" }] },
    };
    const first = await startEmulator(options);
    const main = (await call(first, "GET", `${P}/branches`)).body.branches[0].id as string;
    await query(
      first,
      "create table items (id serial primary key, name text); insert into items (name) values ('one')",
    );
    clock.advance(10_000);
    const point = new Date(clock.now()).toISOString();
    clock.advance(10_000);
    const snapshot = await call(first, "POST", `${P}/branches/${main}/snapshot?name=kept`);
    clock.advance(5000);
    await query(first, "insert into items (name) values ('two')");
    clock.advance(1000);
    const masked = await call(first, "POST", `${P}/branch_anonymized`, {
      masking_rules: [
        {
          database_name: "neondb",
          schema_name: "public",
          table_name: "items",
          column_name: "name",
          masking_value: "'x'",
        },
      ],
    });
    expect(masked.status).toBe(201);
    clock.advance(5000);
    const schedule = [{ frequency: "monthly", day: 1, hour: 4 }];
    expect((await call(first, "PUT", `${P}/branches/${main}/backup_schedule`, { schedule })).status).toBe(
      200,
    );
    await first.close();

    const second = await startEmulator(options);
    try {
      expect(
        (await call(second, "GET", `${P}/snapshots`)).body.snapshots.map((s: { name: string }) => s.name),
      ).toEqual(["kept"]);
      expect((await call(second, "GET", `${P}/branches/${main}/backup_schedule`)).body).toEqual({ schedule });
      const rules = await call(second, "GET", `${P}/branches/${masked.body.branch.id}/masking_rules`);
      expect(rules.body.masking_rules).toHaveLength(1);

      const restored = await call(second, "POST", `${P}/snapshots/${snapshot.body.snapshot.id}/restore`, {});
      clock.advance(5000);
      await call(second, "POST", `${P}/endpoints`, {
        endpoint: { branch_id: restored.body.branch.id, type: "read_write" },
      });
      clock.advance(5000);
      const past = await call(second, "POST", `${P}/branches`, {
        branch: { parent_timestamp: point },
        endpoints: [{ type: "read_write" }],
      });
      expect(past.status).toBe(201);
      clock.advance(5000);
      expect(await query(second, "select name from items order by id", restored.body.branch.id)).toEqual([
        { name: "one" },
      ]);
      expect(await query(second, "select name from items order by id", past.body.branch.id)).toEqual([
        { name: "one" },
      ]);
      expect(await query(second, "select name from items order by id")).toEqual([
        { name: "one" },
        { name: "two" },
      ]);
    } finally {
      await second.close();
    }
  });
});
