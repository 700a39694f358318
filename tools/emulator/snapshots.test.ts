// Snapshots and backup schedules as a user notices them: a snapshot restored holds the data it
// was taken with, never what was written after; finalizing puts it in the replaced branch's place
// (name, computes, default flag) and keeps that one as "<name> (old)"; snapshots are listed,
// renamed, expire and are deleted; schedules are kept as sent, and refused as the document says.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness } from "../../test/emulator/harness.ts";
import { connectBranch, itemNames as names, momentBetween } from "../../test/emulator/postgres.ts";

const P = "/projects/demo-project";

const iso = (ms: number): string => new Date(ms).toISOString();

describe("snapshots", () => {
  it("a restored snapshot holds its data, not what was written after; finalizing puts it in the branch's place", async () => {
    const h = await startHarness();
    const { main } = await branchesOf(h);
    const db = await connectBranch(h, "demo-project");
    await db.query(
      "create table items (id serial primary key, name text); insert into items (name) values ('kept')",
    );
    h.clock.advance(5000);

    const taken = await h.api("POST", `${P}/branches/${main}/snapshot?name=before-cleanup`);
    expect(taken.status).toBe(200);
    expect(taken.body.snapshot).toMatchObject({
      name: "before-cleanup",
      source_branch_id: main,
      manual: true,
    });
    expect(taken.body.operations.map((o: { action: string }) => o.action)).toEqual([
      "timeline_mark_invisible",
    ]);
    // Its operation holds the project's lock like any other.
    expect((await h.api("POST", `${P}/branches`, {})).status).toBe(423);
    h.clock.advance(5000);
    await db.query("insert into items (name) values ('written after')");
    h.clock.advance(1000);

    const snapshotId = taken.body.snapshot.id as string;
    const restored = await h.api("POST", `${P}/snapshots/${snapshotId}/restore`, { name: "preview" });
    expect(restored.status).toBe(200);
    expect(restored.body.branch).toMatchObject({
      name: "preview",
      restore_status: "restored",
      restored_from: snapshotId,
    });
    expect(restored.body.branch.parent_id).toBeUndefined();
    expect(restored.body.operations.map((o: { action: string }) => o.action)).toEqual(["create_branch"]);
    const preview = restored.body.branch.id as string;
    h.clock.advance(5000);
    const endpoint = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: preview, type: "read_write" },
    });
    expect(endpoint.status).toBe(201);
    h.clock.advance(5000);
    expect(await names(await connectBranch(h, "demo-project", preview))).toEqual(["kept"]);
    expect(await names(db)).toEqual(["kept", "written after"]);

    // A second restore, finalized at once: main's compute moves to it and it becomes main.
    const [mainEndpoint] = (await h.api("GET", `${P}/branches/${main}/endpoints`)).body.endpoints;
    const finalized = await h.api("POST", `${P}/snapshots/${snapshotId}/restore`, { finalize_restore: true });
    expect(finalized.status).toBe(200);
    const replacement = finalized.body.branch;
    expect(replacement).toMatchObject({
      name: "main",
      default: true,
      restore_status: "finalized",
      restored_as: main,
    });
    expect(finalized.body.endpoints.map((e: { id: string }) => e.id)).toEqual([mainEndpoint.id]);
    expect(finalized.body.operations.map((o: { action: string }) => o.action)).toEqual([
      "create_branch",
      "apply_config",
      "suspend_compute",
      "start_compute",
    ]);
    h.clock.advance(10_000);
    // The connection URI of the default branch now reaches the snapshot's data.
    expect(await names(await connectBranch(h, "demo-project"))).toEqual(["kept"]);
    const old = (await h.api("GET", `${P}/branches/${main}`)).body.branch;
    expect(old).toMatchObject({ name: "main (old)", default: false });
  });

  it("finalize_restore puts a previewed restore in the target's place and renames the target as asked", async () => {
    const h = await startHarness();
    const { main } = await branchesOf(h);
    const taken = await h.api("POST", `${P}/branches/${main}/snapshot`);
    h.clock.advance(5000);
    const restored = await h.api("POST", `${P}/snapshots/${taken.body.snapshot.id}/restore`, {
      target_branch_id: main,
    });
    const id = restored.body.branch.id as string;
    // Not before the restored branch is created.
    const early = await h.api("POST", `${P}/branches/${id}/finalize_restore`, {});
    expect(early.status).toBe(422);
    expect(early.body.message).toBe("branch not ready yet");
    h.clock.advance(5000);
    const done = await h.api("POST", `${P}/branches/${id}/finalize_restore`, { name: "main-before-restore" });
    expect(done.status).toBe(200);
    expect(done.body.operations.map((o: { action: string }) => o.action)).toEqual(["apply_config"]);
    h.clock.advance(5000);
    expect((await h.api("GET", `${P}/branches/${main}`)).body.branch.name).toBe("main-before-restore");
    expect((await h.api("GET", `${P}/branches/${id}`)).body.branch).toMatchObject({
      name: "main",
      default: true,
    });
    const again = await h.api("POST", `${P}/branches/${id}/finalize_restore`, {});
    expect(again.status).toBe(422);
    const { dev } = await branchesOf(h);
    expect((await h.api("POST", `${P}/branches/${dev}/finalize_restore`, {})).status).toBe(400);
  });

  it("is taken at a timestamp within the restore window; a child branch, a point outside it and a second name are refused", async () => {
    const h = await startHarness();
    const { main, dev } = await branchesOf(h);
    const db = await connectBranch(h, "demo-project");
    const point = await momentBetween(
      h,
      db,
      "create table items (id serial primary key, name text); insert into items (name) values ('early')",
      "insert into items (name) values ('late')",
    );

    const past = await h.api(
      "POST",
      `${P}/branches/${main}/snapshot?timestamp=${iso(point)}&slug=early-state`,
    );
    expect(past.status).toBe(200);
    expect(past.body.snapshot).toMatchObject({
      slug: "early-state",
      timestamp: iso(point).replace(/\.\d+Z$/, "Z"),
    });
    h.clock.advance(5000);
    const restored = await h.api("POST", `${P}/snapshots/${past.body.snapshot.id}/restore`, {});
    h.clock.advance(5000);
    await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: restored.body.branch.id, type: "read_write" },
    });
    h.clock.advance(5000);
    expect(await names(await connectBranch(h, "demo-project", restored.body.branch.id))).toEqual(["early"]);

    const child = await h.api("POST", `${P}/branches/${dev}/snapshot`);
    expect(child.status).toBe(400);
    expect(child.body.message).toContain("root branches only");
    const outside = await h.api(
      "POST",
      `${P}/branches/${main}/snapshot?timestamp=${iso(point - 86_400_000 * 2)}`,
    );
    expect(outside.status).toBe(400);
    expect(outside.body.message).toMatch(/^timestamp: .* outside the restore window/);
    const slug = await h.api("POST", `${P}/branches/${main}/snapshot?slug=early-state`);
    expect(slug.status).toBe(409);
    expect(
      (await h.api("POST", `${P}/branches/${main}/snapshot?lsn=0/1&timestamp=${iso(point)}`)).status,
    ).toBe(400);
  });

  it("are listed, renamed, given or cleared an expiry, expire, and are deleted with an operation", async () => {
    const h = await startHarness();
    const { main } = await branchesOf(h);
    const expires = iso(h.clock.now() + 60_000).replace(/\.\d+Z$/, "Z");
    const first = await h.api("POST", `${P}/branches/${main}/snapshot?name=one&expires_at=${expires}`);
    expect(first.body.snapshot.expires_at).toBe(expires);
    h.clock.advance(5000);
    const second = await h.api("POST", `${P}/branches/${main}/snapshot?name=two`);
    h.clock.advance(5000);
    const listed = await h.api("GET", `${P}/snapshots`);
    expect(listed.body.snapshots.map((s: { name: string }) => s.name)).toEqual(["one", "two"]);

    const renamed = await h.api("PATCH", `${P}/snapshots/${second.body.snapshot.id}`, {
      snapshot: { name: "two renamed", expires_at: expires },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.snapshot).toMatchObject({ name: "two renamed", expires_at: expires });
    const cleared = await h.api("PATCH", `${P}/snapshots/${second.body.snapshot.id}`, {
      snapshot: { expires_at: null },
    });
    expect(cleared.body.snapshot.expires_at).toBeUndefined();
    const past = await h.api("PATCH", `${P}/snapshots/${second.body.snapshot.id}`, {
      snapshot: { expires_at: iso(h.clock.now() - 1000) },
    });
    expect(past.status).toBe(400);

    // At its expiry the platform deletes it.
    h.clock.advance(60_000);
    expect(
      (await h.api("GET", `${P}/snapshots`)).body.snapshots.map((s: { name: string }) => s.name),
    ).toEqual(["two renamed"]);
    h.clock.advance(5000);
    const deleted = await h.api("DELETE", `${P}/snapshots/${second.body.snapshot.id}`);
    expect(deleted.status).toBe(202);
    expect(deleted.body.operations.map((o: { action: string }) => o.action)).toEqual(["delete_timeline"]);
    expect((await h.api("GET", `${P}/snapshots`)).body.snapshots).toEqual([]);
    h.clock.advance(5000);
    expect((await h.api("DELETE", `${P}/snapshots/${second.body.snapshot.id}`)).status).toBe(404);
  });

  it("are limited to one manual snapshot per project on the free plan", async () => {
    const h = await startHarness({
      seed: { limits: { plan: "free" }, projects: [{ id: "demo-project", name: "demo" }] },
    });
    const { main } = await branchesOf(h);
    expect((await h.api("POST", `${P}/branches/${main}/snapshot`)).status).toBe(200);
    h.clock.advance(5000);
    const second = await h.api("POST", `${P}/branches/${main}/snapshot`);
    expect(second.status).toBe(422);
    expect(second.body.message).toContain("limit of 1");
  });
});

describe("backup schedules", () => {
  it("are kept as sent and shown; an empty, unknown or misshapen schedule is refused naming the field", async () => {
    const h = await startHarness();
    const { main, dev } = await branchesOf(h);
    const path = `${P}/branches/${main}/backup_schedule`;
    expect((await h.api("GET", path)).body).toEqual({ schedule: [] });
    const schedule = [
      { frequency: "daily", hour: 23, retention_seconds: 604_800 },
      { frequency: "weekly", day: 7, hour: 2 },
    ];
    const put = await h.api("PUT", path, { schedule });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({});
    expect((await h.api("GET", path)).body).toEqual({ schedule });

    const refused = async (body: unknown) => (await h.api("PUT", path, body)).body.message as string;
    expect(await refused({ schedule: [] })).toMatch(/^schedule: /);
    expect(await refused({ schedule: [{ frequency: "hourly" }] })).toMatch(/^schedule\.0\.frequency: /);
    expect(await refused({ schedule: [{ frequency: "daily", retention_seconds: 60 }] })).toMatch(
      /^schedule\.0\.retention_seconds: /,
    );
    expect(await refused({ schedule: [{ frequency: "daily", hour: 24 }] })).toMatch(/^schedule\.0\.hour: /);
    expect(await refused({ schedule: [{ frequency: "weekly", hour: 1 }] })).toMatch(/^schedule\.0\.day: /);
    expect(await refused({ schedule: [{ frequency: "weekly", day: 9 }] })).toMatch(/^schedule\.0\.day: /);
    expect(await refused({ schedule: [{ frequency: "monthly", day: 1, month: 2 }] })).toMatch(
      /^schedule\.0\.month: /,
    );
    expect((await h.api("GET", path)).body).toEqual({ schedule });

    const child = await h.api("PUT", `${P}/branches/${dev}/backup_schedule`, { schedule });
    expect(child.status).toBe(400);
  });

  it("are refused on the free plan", async () => {
    const h = await startHarness({
      seed: { limits: { plan: "free" }, projects: [{ id: "demo-project", name: "demo" }] },
    });
    const { main } = await branchesOf(h);
    const put = await h.api("PUT", `${P}/branches/${main}/backup_schedule`, {
      schedule: [{ frequency: "daily" }],
    });
    expect(put.status).toBe(422);
  });
});
