// The platform client's data routes over real HTTP against the emulator and its Postgres: a
// branch from a timestamp, an LSN or the schema alone; anonymized branches (rules, runs, state);
// snapshots (take, list, rename, restore, finalize, delete) and backup schedules.
import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import { connectBranch } from "../../test/support/platform/postgres.ts";
import { documentSchemas } from "../../test/emulator/openapi.ts";
import { branchBody } from "./branch-schemas.ts";
import type { PlatformClient } from "./client.ts";
import type { MaskingRule } from "./anonymized-schemas.ts";
import { BadRequestError, NotFoundError, UnprocessableError } from "./errors.ts";
import type { Operation } from "./schemas.ts";
import { backupScheduleBody, snapshotPatchBody, snapshotRestoreBody } from "./snapshot-schemas.ts";

const schemas = documentSchemas;

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

describe("the platform client's branch points, anonymized branches, snapshots and backup schedules", () => {
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

  const settle = async (operations: readonly Operation[]) => {
    const outcome = await client.waitForOperations("shop", operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    expect(outcome.state).toBe("finished");
  };

  const names = async (db: pg.Client): Promise<string[]> =>
    (await db.query("select name from items order by id")).rows.map((r: { name: string }) => r.name);

  it("sends only the document's request fields", () => {
    const create = schemas["BranchCreateRequest"]!.properties!["branch"]!.properties!;
    const point = branchBody({
      parentId: main,
      parentTimestamp: "2026-01-01T00:00:00Z",
      initSource: "schema-only",
    });
    for (const field of Object.keys(point.branch)) expect(create).toHaveProperty(field);
    expect(Object.keys(branchBody({ parentLsn: "0/1" }).branch)).toEqual(["parent_lsn"]);
    const update = schemas["SnapshotUpdateRequest"]!.properties!["snapshot"]!.properties!;
    expect(update).toHaveProperty(Object.keys(snapshotPatchBody({ name: "x" }).snapshot)[0]!);
    const item = schemas["BackupScheduleItem"]!.properties!;
    const [sent] = backupScheduleBody([
      { frequency: "weekly", day: 1, hour: 2, retentionSeconds: 3600 },
    ]).schedule;
    for (const field of Object.keys(sent!)) expect(item).toHaveProperty(field);
    expect(
      Object.keys(snapshotRestoreBody({ name: "n", targetBranchId: "br-x", finalizeRestore: true })).sort(),
    ).toEqual(["finalize_restore", "name", "target_branch_id"]);
  });

  const masked = async (branchId: string) =>
    expect
      .poll(async () => (await client.anonymizedStatus("shop", branchId)).state, { timeout: 20_000 })
      .toBe("anonymized");

  it("creates a masked branch, runs changed rules again, and refuses a rule naming a missing column", async () => {
    const db = await connectBranch(client, "shop", main);
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
    const rows = (
      await (await connectBranch(client, "shop", id)).query("select email, city from people order by id")
    ).rows;
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
    const again = (await (await connectBranch(client, "shop", id)).query("select distinct city from people"))
      .rows;
    expect(again).toEqual([{ city: "HIDDEN" }]);
    expect((await client.anonymizedStatus("shop", id)).lastRun?.maskedColumns).toBe(2);

    const bad = client.updateMaskingRules("shop", id, [
      rule("phone", { maskingFunction: "anon.fake_email()" }),
    ]);
    await expect(bad).rejects.toBeInstanceOf(BadRequestError);
    await expect(bad).rejects.toThrow("column public.people.phone does not exist");
    await expect(client.anonymizedStatus("shop", "br-dev")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("creates branches from a timestamp, an LSN and the schema alone, each with the data of its point", async () => {
    const db = await connectBranch(client, "shop", main);
    await db.query(
      "create table items (id serial primary key, name text); insert into items (name) values ('early')",
    );
    await sleep(30);
    const between = new Date().toISOString();
    await sleep(30);
    await db.query("insert into items (name) values ('late')");

    const byTime = await client.createBranch("shop", {
      parentId: main,
      name: "by-time",
      parentTimestamp: between,
      endpoints: [{ type: "read_write" }],
    });
    expect(byTime.branch.parentLsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    await settle(byTime.operations);
    expect(await names(await connectBranch(client, "shop", byTime.branch.id))).toEqual(["early"]);

    const byLsn = await client.createBranch("shop", {
      parentId: main,
      name: "by-lsn",
      parentLsn: byTime.branch.parentLsn!,
      endpoints: [{ type: "read_write" }],
    });
    await settle(byLsn.operations);
    expect(await names(await connectBranch(client, "shop", byLsn.branch.id))).toEqual(["early"]);

    const schema = await client.createBranch("shop", {
      parentId: main,
      name: "schema",
      initSource: "schema-only",
      endpoints: [{ type: "read_write" }],
    });
    expect(schema.branch).toMatchObject({ initSource: "schema-only", parentId: undefined });
    await settle(schema.operations);
    expect(await names(await connectBranch(client, "shop", schema.branch.id))).toEqual([]);

    const refused = client.createBranch("shop", { parentId: main, parentTimestamp: "2000-01-01T00:00:00Z" });
    await expect(refused).rejects.toBeInstanceOf(BadRequestError);
    await expect(refused).rejects.toThrow(/branch\.parent_timestamp: .* outside the restore window/);
  });

  it("takes, lists, renames, restores, finalizes and deletes snapshots", async () => {
    const db = await connectBranch(client, "shop", main);
    await db.query("create table if not exists items (id serial primary key, name text)");
    await db.query("delete from items; insert into items (name) values ('in the snapshot')");
    const taken = await client.createSnapshot("shop", main, { name: "before" }, { ticket: "test/snap" });
    expect(taken.snapshot).toMatchObject({ name: "before", sourceBranchId: main, manual: true });
    expect(taken.snapshot.lsn).toMatch(/\//);
    await settle(taken.operations);
    await db.query("insert into items (name) values ('after the snapshot')");

    expect((await client.listSnapshots("shop")).map((s) => s.id)).toContain(taken.snapshot.id);
    const renamed = await client.updateSnapshot("shop", taken.snapshot.id, { name: "before cleanup" });
    expect(renamed.name).toBe("before cleanup");

    const restored = await client.restoreSnapshot("shop", taken.snapshot.id, { name: "preview" });
    expect(restored.branch).toMatchObject({
      name: "preview",
      restoreStatus: "restored",
      restoredFrom: taken.snapshot.id,
    });
    await settle(restored.operations);
    const finalized = await client.finalizeRestore("shop", restored.branch.id, {
      name: "main before restore",
    });
    await settle(finalized.operations);
    const branches = await client.listBranches("shop");
    expect(branches.find((b) => b.id === restored.branch.id)).toMatchObject({ name: "main", default: true });
    expect(branches.find((b) => b.id === main)).toMatchObject({
      name: "main before restore",
      default: false,
    });
    // main's endpoint now serves the snapshot's rows.
    expect(await names(await connectBranch(client, "shop", restored.branch.id))).toEqual(["in the snapshot"]);
    await expect(client.finalizeRestore("shop", restored.branch.id)).rejects.toBeInstanceOf(
      UnprocessableError,
    );

    const deleted = await client.deleteSnapshot("shop", taken.snapshot.id);
    expect(deleted.operations.map((op) => op.action)).toEqual(["delete_timeline"]);
    await settle(deleted.operations);
    expect(await client.listSnapshots("shop")).toEqual([]);
    main = restored.branch.id;
  });

  it("sets and reads a backup schedule; a misshapen one is refused naming the field", async () => {
    const schedule = [{ frequency: "daily", hour: 3, retentionSeconds: 86_400 }];
    await client.setBackupSchedule("shop", main, schedule);
    expect(await client.getBackupSchedule("shop", main)).toEqual([
      { ...schedule[0], day: undefined, month: undefined },
    ]);
    const refused = client.setBackupSchedule("shop", main, [{ frequency: "daily", retentionSeconds: 60 }]);
    await expect(refused).rejects.toBeInstanceOf(BadRequestError);
    await expect(refused).rejects.toThrow(/schedule\.0\.retention_seconds/);
  });
});
