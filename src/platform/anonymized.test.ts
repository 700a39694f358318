// The platform client's anonymized branches over real HTTP against the emulator and its
// Postgres: create with rules and a run, read the state until masked, change the rules and run
// them again; a bad rule is a BadRequestError naming the column.
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import type { MaskingRule } from "./anonymized-schemas.ts";
import type { PlatformClient } from "./client.ts";
import { BadRequestError, NotFoundError } from "./errors.ts";

const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => undefined)));
});

const rule = (
  column: string,
  masking: Pick<MaskingRule, "maskingFunction" | "maskingValue">,
): MaskingRule => ({
  databaseName: "neondb",
  schemaName: "public",
  tableName: "people",
  columnName: column,
  ...masking,
});

describe("the platform client's anonymized branches", () => {
  let platform: TestPlatform;
  let client: PlatformClient;
  let main: string;

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 50,
      seed: { projects: [{ id: "shop", name: "shop", branches: [{ id: "br-dev", name: "dev" }] }] },
    });
    client = platform.client();
    main = (await client.listBranches("shop")).find((b) => b.default)!.id;
  });
  afterAll(() => platform.close());

  const connect = async (branchId: string): Promise<pg.Client> => {
    const uri = await client.connectionUri("shop", {
      branchId,
      databaseName: "neondb",
      roleName: "neondb_owner",
    });
    const db = new pg.Client({ connectionString: uri });
    db.on("error", () => undefined);
    clients.push(db);
    await db.connect();
    return db;
  };

  const masked = async (branchId: string) =>
    expect
      .poll(async () => (await client.anonymizedStatus("shop", branchId)).state, { timeout: 20_000 })
      .toBe("anonymized");

  it("creates a masked branch, runs changed rules again, and refuses a rule naming a missing column", async () => {
    const db = await connect(main);
    await db.query(`create table people (id serial primary key, email text, city text);
      insert into people (email, city) values ('ann@corp.test', 'Oslo'), ('bob@corp.test', 'Lima');`);

    const created = await client.createAnonymizedBranch(
      "shop",
      {
        branch: { parentId: main, name: "masked" },
        maskingRules: [rule("email", { maskingFunction: "anon.fake_email()" })],
        startAnonymization: true,
      },
      { ticket: "test/masked" },
    );
    const id = created.branch.id;
    expect(created.branch.restrictedActions?.map((a) => a.name)).toEqual(["restore", "delete-rw-endpoint"]);
    expect(created.endpoints.map((e) => e.type)).toEqual(["read_write"]);
    await client.waitForOperations("shop", created.operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
    await masked(id);
    const rows = (await (await connect(id)).query("select email, city from people order by id")).rows;
    expect(rows.map((r: { city: string }) => r.city)).toEqual(["Oslo", "Lima"]);
    for (const row of rows) expect(row.email).toMatch(/^[^@\s]+@[^@\s]+\.[a-z]+$/);
    expect(rows.map((r: { email: string }) => r.email)).not.toContain("ann@corp.test");

    const rules = [
      rule("email", { maskingFunction: "anon.fake_email()" }),
      rule("city", { maskingValue: "'HIDDEN'" }),
    ];
    expect(await client.updateMaskingRules("shop", id, rules)).toEqual(rules);
    expect(await client.getMaskingRules("shop", id)).toEqual(rules);
    const started = await client.anonymize("shop", id);
    expect(started.state).toBe("anonymizing");
    await masked(id);
    const again = (await (await connect(id)).query("select distinct city from people")).rows;
    expect(again).toEqual([{ city: "HIDDEN" }]);
    expect((await client.anonymizedStatus("shop", id)).lastRun?.maskedColumns).toBe(2);

    const bad = client.updateMaskingRules("shop", id, [
      rule("phone", { maskingFunction: "anon.fake_email()" }),
    ]);
    await expect(bad).rejects.toBeInstanceOf(BadRequestError);
    await expect(bad).rejects.toThrow("column public.people.phone does not exist");
    await expect(client.anonymizedStatus("shop", "br-dev")).rejects.toBeInstanceOf(NotFoundError);
  });
});
