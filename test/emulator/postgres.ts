// Connecting to the emulator's Postgres the way a user does, with nothing but a connection URI;
// every connection a test opens is closed after it.
import pg from "pg";
import { afterEach, expect } from "vitest";
import type { Harness } from "./harness.ts";

const open: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.end().catch(() => undefined)));
});

/** A connection to `uri`, closed after the test. */
export async function connectUri(uri: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: uri });
  // A dropped connection (a restore, a masking run) surfaces on the next query.
  client.on("error", () => undefined);
  open.push(client);
  await client.connect();
  return client;
}

/** The owner's connection to `neondb` of a branch of the project (default: its default branch). */
export async function connectBranch(h: Harness, projectId: string, branchId?: string): Promise<pg.Client> {
  const branch = branchId === undefined ? "" : `&branch_id=${branchId}`;
  const res = await h.api(
    "GET",
    `/projects/${projectId}/connection_uri?database_name=neondb&role_name=neondb_owner${branch}`,
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return connectUri(res.body.uri as string);
}

/**
 * Runs `before`, lets ten emulated seconds pass, takes that moment, lets ten more pass and runs
 * `after`: the moment lies between the two writes.
 */
export async function momentBetween(
  h: Harness,
  db: pg.Client,
  before: string,
  after: string,
): Promise<number> {
  await db.query(before);
  h.clock.advance(10_000);
  const moment = h.clock.now();
  h.clock.advance(10_000);
  await db.query(after);
  return moment;
}

/** The `name` column of a test's `items` table, in id order. */
export async function itemNames(db: pg.Client): Promise<string[]> {
  return (await db.query("select name from items order by id")).rows.map((r: { name: string }) => r.name);
}
