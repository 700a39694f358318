// The platform client's data routes for a branch's past: a branch from a timestamp or an LSN or
// from the schema alone, snapshots (take, list, rename, restore, finalize, delete) and backup
// schedules, over real HTTP against the emulator and its Postgres.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import { branchBody } from "./branch-schemas.ts";
import type { PlatformClient } from "./client.ts";
import { BadRequestError, UnprocessableError } from "./errors.ts";
import type { Operation } from "./schemas.ts";
import { backupScheduleBody, snapshotPatchBody, snapshotRestoreBody } from "./snapshot-schemas.ts";

interface SchemaNode {
  required?: string[];
  properties?: Record<string, SchemaNode>;
}

const require = createRequire(import.meta.url);
const document = parse(
  readFileSync(require.resolve("@neondatabase/api-client/public-v2-for-users.gen.yaml"), "utf8"),
) as { components: { schemas: Record<string, SchemaNode> } };
const schemas = document.components.schemas;

const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => undefined)));
});

describe("the platform client's branch points, snapshots and backup schedules", () => {
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

  it("creates branches from a timestamp, an LSN and the schema alone, each with the data of its point", async () => {
    const db = await connect(main);
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
    expect(await names(await connect(byTime.branch.id))).toEqual(["early"]);

    const byLsn = await client.createBranch("shop", {
      parentId: main,
      name: "by-lsn",
      parentLsn: byTime.branch.parentLsn!,
      endpoints: [{ type: "read_write" }],
    });
    await settle(byLsn.operations);
    expect(await names(await connect(byLsn.branch.id))).toEqual(["early"]);

    const schema = await client.createBranch("shop", {
      parentId: main,
      name: "schema",
      initSource: "schema-only",
      endpoints: [{ type: "read_write" }],
    });
    expect(schema.branch).toMatchObject({ initSource: "schema-only", parentId: undefined });
    await settle(schema.operations);
    expect(await names(await connect(schema.branch.id))).toEqual([]);

    const refused = client.createBranch("shop", { parentId: main, parentTimestamp: "2000-01-01T00:00:00Z" });
    await expect(refused).rejects.toBeInstanceOf(BadRequestError);
    await expect(refused).rejects.toThrow(/branch\.parent_timestamp: .* outside the restore window/);
  });

  it("takes, lists, renames, restores, finalizes and deletes snapshots", async () => {
    const db = await connect(main);
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
    expect(await names(await connect(restored.branch.id))).toEqual(["in the snapshot"]);
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
