// Anonymized branches as a user notices them: the masked columns differ from the parent's in
// every row and keep their format, the other columns and the row count stay; changed rules run at
// the next `anonymize`; a rule naming an unknown function or a missing column is refused naming
// it; the states are the document's; restoring the branch or deleting its compute is refused.
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";
import { connectBranch } from "../../test/emulator/postgres.ts";

const P = "/projects/demo-project";

const rule = (column: string, masking: { masking_function?: string; masking_value?: string }) => ({
  database_name: "neondb",
  schema_name: "public",
  table_name: "users",
  column_name: column,
  ...masking,
});

const rules = [
  rule("email", { masking_function: "anon.fake_email()" }),
  rule("backup_email", { masking_function: "anon.partial_email(backup_email)" }),
  rule("first_name", { masking_function: "anon.dummy_first_name()" }),
  rule("last_name", { masking_function: "anon.fake_last_name()" }),
  rule("phone", { masking_function: "anon.partial(phone, 2, 'XXX-XXXX', 2)" }),
  rule("age", { masking_function: "anon.random_int_between(25, 65)" }),
  rule("city", { masking_value: "'CONFIDENTIAL'" }),
];

/** A users table on main, with a table that refers to it. */
async function seedUsers(h: Harness): Promise<pg.Client> {
  const main = await connectBranch(h, "demo-project");
  await main.query(`
    create table users (id serial primary key, email text not null, backup_email text, first_name text,
                        last_name text, phone text, age int, city text, note text);
    create table orders (id serial primary key, user_id int references users (id));
    insert into users (email, backup_email, first_name, last_name, phone, age, city, note)
    select 'person' || g || '@corp.test', 'backup' || g || '@mail.test', 'Ezekiel' || g, 'Smithson' || g,
           '555-010-' || lpad(g::text, 4, '0'), 80 + g, 'Springfield', 'note ' || g
    from generate_series(1, 12) g;`);
  h.clock.advance(1000);
  return main;
}

const rowsOf = async (client: pg.Client) => (await client.query("select * from users order by id")).rows;

async function anonymized(h: Harness, branchId: string): Promise<void> {
  await expect
    .poll(async () => (await h.api("GET", `${P}/branches/${branchId}/anonymized_status`)).body.state, {
      timeout: 20_000,
    })
    .toBe("anonymized");
}

describe("anonymized branches", () => {
  it("mask the named columns in every row, keeping their format; other columns and the row count stay", async () => {
    const h = await startHarness();
    const main = await seedUsers(h);
    const created = await h.api("POST", `${P}/branch_anonymized`, {
      branch_create: { branch: { name: "masked" } },
      masking_rules: rules,
      start_anonymization: true,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const branch = created.body.branch;
    expect(branch.restricted_actions.map((a: { name: string }) => a.name)).toEqual([
      "restore",
      "delete-rw-endpoint",
    ]);
    expect(created.body.endpoints.map((e: { type: string }) => e.type)).toEqual(["read_write"]);
    expect(created.body.operations.map((o: { action: string }) => o.action)).toEqual([
      "create_branch",
      "start_compute",
    ]);
    const status = await h.api("GET", `${P}/branches/${branch.id}/anonymized_status`);
    expect(status.body.state).toBe("created");

    h.clock.advance(5000);
    await anonymized(h, branch.id);
    const done = (await h.api("GET", `${P}/branches/${branch.id}/anonymized_status`)).body;
    expect(done.last_run.masked_columns).toBe(rules.length);
    expect(done.status_message).toContain("1 tables, 7 masking rules");

    const original = await rowsOf(main);
    const masked = await rowsOf(await connectBranch(h, "demo-project", branch.id));
    expect(masked).toHaveLength(original.length);
    masked.forEach((row, i) => {
      const before = original[i]!;
      expect(row.id).toBe(before.id);
      expect(row.note).toBe(before.note);
      for (const column of ["email", "backup_email", "first_name", "last_name", "phone", "city"]) {
        expect(row[column], column).not.toBe(before[column]);
      }
      expect(row.email).toMatch(/^[a-z]+\.[a-z]+\d{3}@[a-z.]+\.[a-z]+$/);
      expect(row.backup_email).toMatch(/^ba\*{6}@ma\*{6}\.test$/);
      expect(row.phone).toBe(`55XXX-XXXX${String(before.phone).slice(-2)}`);
      expect(row.first_name).toMatch(/^[A-Z][a-z]+$/);
      expect(row.age).toBeGreaterThanOrEqual(25);
      expect(row.age).toBeLessThanOrEqual(65);
      expect(row.city).toBe("CONFIDENTIAL");
    });
    // The parent keeps its data.
    expect(await rowsOf(main)).toEqual(original);
  });

  it("draw their values from the emulator's seed: the same seed masks alike, another differently", async () => {
    const maskedEmails = async (randomSeed: number): Promise<string[]> => {
      const h = await startHarness({ randomSeed });
      await seedUsers(h);
      const created = await h.api("POST", `${P}/branch_anonymized`, {
        masking_rules: [rules[0]],
        start_anonymization: true,
      });
      h.clock.advance(5000);
      await anonymized(h, created.body.branch.id);
      const db = await connectBranch(h, "demo-project", created.body.branch.id);
      return (await db.query("select email from users order by id")).rows.map(
        (r: { email: string }) => r.email,
      );
    };
    const first = await maskedEmails(7);
    expect(await maskedEmails(7)).toEqual(first);
    expect(await maskedEmails(8)).not.toEqual(first);
  });

  it("run changed rules at the next anonymize, over the data already masked; the states follow the document", async () => {
    const h = await startHarness();
    await seedUsers(h);
    const created = await h.api("POST", `${P}/branch_anonymized`, { masking_rules: [rules[6]] });
    const id = created.body.branch.id as string;
    const early = await h.api("POST", `${P}/branches/${id}/anonymize`);
    expect(early.status).toBe(422);
    h.clock.advance(5000);
    expect((await h.api("GET", `${P}/branches/${id}/anonymized_status`)).body.state).toBe("initialized");
    const started = await h.api("POST", `${P}/branches/${id}/anonymize`);
    expect(started.status).toBe(200);
    expect(started.body.state).toBe("anonymizing");
    await anonymized(h, id);
    const db = await connectBranch(h, "demo-project", id);
    expect((await db.query("select distinct city from users")).rows).toEqual([{ city: "CONFIDENTIAL" }]);

    const patched = await h.api("PATCH", `${P}/branches/${id}/masking_rules`, {
      masking_rules: [rule("city", { masking_value: "'REDACTED'" }), rules[0]],
    });
    expect(patched.status).toBe(200);
    expect((await h.api("GET", `${P}/branches/${id}/masking_rules`)).body.masking_rules).toEqual(
      patched.body.masking_rules,
    );
    // Not applied until anonymize.
    expect((await db.query("select distinct city from users")).rows).toEqual([{ city: "CONFIDENTIAL" }]);
    const emails = (await db.query("select email from users order by id")).rows;
    expect((await h.api("POST", `${P}/branches/${id}/anonymize`)).status).toBe(200);
    await anonymized(h, id);
    const again = await connectBranch(h, "demo-project", id);
    expect((await again.query("select distinct city from users")).rows).toEqual([{ city: "REDACTED" }]);
    const remasked = (await again.query("select email from users order by id")).rows;
    remasked.forEach((row, i) => expect(row.email).not.toBe(emails[i]!.email));
  });

  it("refuse a rule naming an unknown function or a missing database, table or column, naming it", async () => {
    const h = await startHarness();
    await seedUsers(h);
    const refusal = async (masking_rules: unknown[]) => {
      const res = await h.api("POST", `${P}/branch_anonymized`, { masking_rules });
      expect(res.status).toBe(400);
      return res.body.message as string;
    };
    expect(await refusal([rule("email", { masking_function: "anon.fake_email_address()" })])).toBe(
      "masking_rules[0].masking_function: unknown masking function anon.fake_email_address() (column neondb.public.users.email)",
    );
    expect(await refusal([rule("nickname", { masking_function: "anon.fake_first_name()" })])).toBe(
      "masking_rules[0].column_name: column public.users.nickname does not exist in database neondb",
    );
    expect(await refusal([{ ...rule("email", { masking_value: "'x'" }), table_name: "people" }])).toMatch(
      /^masking_rules\[0\]\.table_name: table public\.people does not exist/,
    );
    expect(await refusal([{ ...rule("email", { masking_value: "'x'" }), database_name: "shop" }])).toMatch(
      /^masking_rules\[0\]\.database_name: database shop does not exist/,
    );
    expect(await refusal([{ ...rule("user_id", { masking_value: "0" }), table_name: "orders" }])).toMatch(
      /^masking_rules\[0\]\.column_name: column public\.orders\.user_id is part of a foreign key/,
    );
    expect(
      await refusal([rule("email", { masking_function: "anon.fake_email()", masking_value: "'x'" })]),
    ).toMatch(/^masking_rules\[0\]: give masking_function or masking_value/);
    expect(await refusal([rule("email", { masking_value: "anon.fake_email()" })])).toMatch(
      /^masking_rules\[0\]\.masking_value: must be a literal/,
    );
    expect(await refusal([rule("phone", { masking_function: "anon.partial(phone, 2)" })])).toMatch(
      /takes 4 arguments, got 2/,
    );
    // None of the refused requests made a branch.
    expect(Object.keys(await branchesOf(h)).sort()).toEqual(["dev", "main", "staging"]);
  });

  it("refuse a restore and the deletion of their read-write compute; a plain branch has no masking state", async () => {
    const h = await startHarness();
    const { main, dev } = await branchesOf(h);
    const created = await h.api("POST", `${P}/branch_anonymized`, {});
    const id = created.body.branch.id as string;
    h.clock.advance(5000);
    const restore = await h.api("POST", `${P}/branches/${id}/restore`, { source_branch_id: main });
    expect(restore.status).toBe(422);
    expect(restore.body.message).toBe("cannot restore anonymized branches");
    const endpoint = created.body.endpoints[0].id as string;
    const deleted = await h.api("DELETE", `${P}/endpoints/${endpoint}`);
    expect(deleted.status).toBe(422);
    expect(deleted.body.message).toBe("cannot delete read-write endpoints for anonymized branches");
    expect((await h.api("GET", `${P}/branches/${dev}/anonymized_status`)).status).toBe(404);
    expect((await h.api("GET", `${P}/branches/${dev}/masking_rules`)).status).toBe(404);
    expect((await h.api("POST", `${P}/branches/${dev}/anonymize`)).status).toBe(404);
  });
});
