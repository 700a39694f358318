// A Branch's data as teams use it, read through the emulator's Postgres with nothing but the
// platform's connection URI: a branch from a moment of its parent has the rows written before it
// and none after; a schema-only branch has the tables and indexes without a row; a masked branch
// has every row with the declared columns masked, and masked again when its rules change; a
// Snapshot restored as a Branch has the data the snapshot kept, not what was written since; a
// backup schedule is kept as declared. A moment outside the parent's history is refused naming
// the field.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BranchObject } from "../../src/controllers/branch/index.ts";
import { type ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import type { SnapshotObject } from "../../src/controllers/snapshot/index.ts";
import type { Controller, KubeObject } from "../../src/runtime/index.ts";
import {
  branchController,
  computeEndpointController,
  snapshotController,
} from "../../src/controllers/registry.ts";
import { together } from "../support/controllers.ts";
import { eventually, kubectl } from "../support/kube.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { branch, branches, condition, endpoints, ready, readyReason } from "./scenario.ts";

const snapshots = "snapshots.neoncloud.dev";

let h: OperatorHarness;
let main: string;
const clients: pg.Client[] = [];

const factory = together(
  (o) => branchController(o) as unknown as Controller<KubeObject>,
  (o) => computeEndpointController(o) as unknown as Controller<KubeObject>,
  (o) => snapshotController(o) as unknown as Controller<KubeObject>,
);

/** Runs a query on a branch's read-write endpoint, as its owner, with the platform's URI. */
async function sql<R extends pg.QueryResultRow>(branchId: string, text: string): Promise<R[]> {
  const query = new URLSearchParams({
    branch_id: branchId,
    database_name: "neondb",
    role_name: "neondb_owner",
  });
  const res = await fetch(`${h.emulator.url}/projects/proj-alpha/connection_uri?${query.toString()}`, {
    headers: { authorization: `Bearer ${h.emulator.bootstrapKey}` },
  });
  expect(res.status).toBe(200);
  const client = new pg.Client({ connectionString: ((await res.json()) as { uri: string }).uri });
  client.on("error", () => undefined);
  clients.push(client);
  await client.connect();
  try {
    return (await client.query<R>(text)).rows;
  } finally {
    await client.end();
  }
}

const notes = async (branchId: string, table: string) =>
  (await sql<{ note: string }>(branchId, `SELECT note FROM ${table} ORDER BY note`)).map((r) => r.note);

const endpoint = (name: string, branchRef: string) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "ComputeEndpoint",
  metadata: { name },
  spec: { projectId: "proj-alpha", branchRef: { name: branchRef } },
});

/** A Branch made Ready, with a ComputeEndpoint of its own so that its data can be read. */
async function readBranch(name: string, spec: Record<string, unknown>): Promise<string> {
  await h.apply(branch(name, spec));
  const id = (await ready<BranchObject>(h, branches, name)).status!.branchId!;
  await h.apply(endpoint(name, name));
  await ready<ComputeEndpointObject>(h, endpoints, name);
  return id;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  h = await startOperatorHarness(factory, { prefix: "branch-data" });
  // A short resync: drift of a backup schedule made on the platform is found without a change here.
  await h.start({ resyncPeriodMs: 2_000 });
  main = (await h.platform.listBranches("proj-alpha")).find((b) => b.default)!.id;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  await h?.stop();
});

describe("a branch of a moment and of the schema", () => {
  it("parent.timestamp has the rows written before the moment and none after", async () => {
    await sql(main, "CREATE TABLE moments (note text)");
    await sql(main, "INSERT INTO moments VALUES ('before')");
    await pause(1_200);
    const moment = new Date().toISOString();
    await pause(1_200);
    await sql(main, "INSERT INTO moments VALUES ('after')");

    const id = await readBranch("at-moment", { parent: { branchId: main, timestamp: moment } });
    expect(await notes(id, "moments")).toEqual(["before"]);
    expect(await notes(main, "moments")).toEqual(["after", "before"]);
  });

  it("a moment outside the parent's history is refused naming spec.parent.timestamp", async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    await h.apply(branch("in-future", { parent: { branchId: main, timestamp: future } }));
    const refused = await readyReason<BranchObject>(h, branches, "in-future", "False", "InvalidSpec");
    expect(condition(refused, "Ready")?.message).toContain("spec.parent.timestamp");
    expect(refused.status?.branchId).toBeUndefined();
  });

  it("initSource schema-only has the parent's tables and indexes without a row", async () => {
    await sql(main, "CREATE TABLE orders (id int PRIMARY KEY, note text)");
    await sql(main, "CREATE INDEX orders_note ON orders (note)");
    await sql(main, "INSERT INTO orders VALUES (1, 'paid'), (2, 'shipped')");

    const id = await readBranch("schema", { parent: { branchId: main }, initSource: "schema-only" });
    const shape = await sql<{ name: string }>(
      id,
      "SELECT indexname AS name FROM pg_indexes WHERE tablename = 'orders' ORDER BY indexname",
    );
    expect(shape.map((r) => r.name)).toEqual(["orders_note", "orders_pkey"]);
    expect(await sql(id, "SELECT * FROM orders")).toEqual([]);
    expect((await h.platform.listBranches("proj-alpha")).find((b) => b.id === id)?.parentId).toBeUndefined();
  });
});

describe("a masked branch", () => {
  it("has every row with the declared column masked, and masked again when the rules change", async () => {
    await sql(main, "CREATE TABLE people (id int PRIMARY KEY, email text, city text)");
    await sql(
      main,
      "INSERT INTO people SELECT g, 'person' || g || '@shop.example', 'Lisbon' FROM generate_series(1, 20) g",
    );
    const rules = (city: Record<string, string>) => ({
      rules: [
        { database: "neondb", table: "people", column: "email", function: "anon.fake_email()" },
        { database: "neondb", table: "people", column: "city", ...city },
      ],
    });
    await h.apply(branch("masked", { parent: { branchId: main }, masking: rules({ value: "'hidden'" }) }));
    const created = await ready<BranchObject>(h, branches, "masked");
    const id = created.status!.branchId!;
    expect(created.status?.masking?.state).toBe("anonymized");

    type Person = { id: number; email: string; city: string };
    const read = () => sql<Person>(id, "SELECT id, email, city FROM people ORDER BY id");
    const masked = await read();
    expect(masked).toHaveLength(20);
    for (const p of masked) {
      expect(p.email).not.toBe(`person${p.id}@shop.example`);
      expect(p.email).toMatch(/^[^@\s]+@[^@\s]+\.[a-z]+$/);
      expect(p.city).toBe("hidden");
    }
    // The parent keeps its data.
    expect((await sql<Person>(main, "SELECT city FROM people WHERE id = 1"))[0]?.city).toBe("Lisbon");

    // A changed rule is applied to the branch's data again.
    await h.apply(branch("masked", { parent: { branchId: main }, masking: rules({ value: "'elsewhere'" }) }));
    await eventually(
      async () => {
        const obj = await h.get<BranchObject>(branches, "masked");
        const c = condition(obj, "Ready");
        return c?.status === "True" && c.observedGeneration === obj.metadata.generation ? obj : undefined;
      },
      { what: "masked again and Ready", timeoutMs: 30_000, intervalMs: 100 },
    );
    const again = await read();
    expect(again).toHaveLength(20);
    expect(new Set(again.map((p) => p.city))).toEqual(new Set(["elsewhere"]));
  });

  it("a ComputeEndpoint applied after it takes over the read-write endpoint the platform made with it", async () => {
    await sql(main, "CREATE TABLE visitors (id int PRIMARY KEY, city text)");
    await sql(main, "INSERT INTO visitors VALUES (1, 'Porto')");
    const masking = { rules: [{ database: "neondb", table: "visitors", column: "city", value: "'hidden'" }] };
    await h.apply(branch("masked-late", { parent: { branchId: main }, masking }));
    const id = (await ready<BranchObject>(h, branches, "masked-late")).status!.branchId!;
    // The platform gives an anonymized branch a read-write endpoint of its own, asked or not.
    const onBranch = async () =>
      (await h.platform.listEndpoints("proj-alpha")).filter((e) => e.branchId === id);
    const made = await onBranch();
    expect(made.map((e) => e.type)).toEqual(["read_write"]);

    await h.apply(endpoint("masked-late", "masked-late"));
    const taken = await ready<ComputeEndpointObject>(h, endpoints, "masked-late");
    expect(taken.status?.endpointId).toBe(made[0]!.id);
    expect((await h.get<BranchObject>(branches, "masked-late")).status?.endpoint?.name).toBe("masked-late");

    // The platform deletes that endpoint only with its branch: the resource's deletion leaves it
    // there, and the next ComputeEndpoint naming the Branch takes it over.
    await kubectl(["delete", endpoints, "masked-late", "-n", h.namespace, "--wait=true", "--timeout=60s"]);
    expect((await onBranch()).map((e) => e.id)).toEqual([made[0]!.id]);
    await h.apply(endpoint("masked-next", "masked-late"));
    const next = await ready<ComputeEndpointObject>(h, endpoints, "masked-next");
    expect(next.status?.endpointId).toBe(made[0]!.id);
    expect((await onBranch()).map((e) => e.id)).toEqual([made[0]!.id]);
    expect((await sql<{ city: string }>(id, "SELECT city FROM visitors"))[0]?.city).toBe("hidden");
  });
});

describe("a snapshot and its restore", () => {
  it("a Branch from a Snapshot has the data the snapshot kept, not rows written since", async () => {
    await sql(main, "CREATE TABLE kept (note text)");
    await sql(main, "INSERT INTO kept VALUES ('kept')");
    await h.apply({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Snapshot",
      metadata: { name: "nightly" },
      spec: { projectId: "proj-alpha", branchId: main, ttl: "24h" },
    });
    const taken = await eventually(
      async () => {
        const obj = await h.get<SnapshotObject>(snapshots, "nightly");
        const c = obj.status?.conditions?.find((x) => x.type === "Ready");
        return c?.status === "True" ? obj : undefined;
      },
      { what: "snapshot Ready", timeoutMs: 30_000, intervalMs: 100 },
    );
    const snapshotId = taken.status!.snapshotId!;
    expect((await h.platform.listSnapshots("proj-alpha")).map((s) => s.id)).toContain(snapshotId);
    await sql(main, "INSERT INTO kept VALUES ('later')");

    const id = await readBranch("restored", { parent: { snapshotRef: { name: "nightly" } } });
    expect(await notes(id, "kept")).toEqual(["kept"]);

    // Deleting the Snapshot resource deletes the snapshot it took; the restored branch stays.
    await kubectl(["delete", snapshots, "nightly", "-n", h.namespace, "--wait=false"]);
    await eventually(
      async () =>
        (await h.platform.listSnapshots("proj-alpha")).some((s) => s.id === snapshotId) ? undefined : true,
      { what: "snapshot deleted on the platform", timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(await notes(id, "kept")).toEqual(["kept"]);
  });
});

describe("a backup schedule", () => {
  it("is set as declared, and drift made on the platform is repaired", async () => {
    const schedule = [
      { frequency: "daily", hour: 3, retention: "168h" },
      { frequency: "weekly", day: 7, hour: 4, retention: "720h" },
    ];
    await h.apply(branch("primary", { branchId: main, backupSchedule: schedule }));
    await ready<BranchObject>(h, branches, "primary");
    const wanted = [
      { frequency: "daily", hour: 3, retentionSeconds: 168 * 3600 },
      { frequency: "weekly", day: 7, hour: 4, retentionSeconds: 720 * 3600 },
    ];
    const shown = async () =>
      (await h.platform.getBackupSchedule("proj-alpha", main)).map((i) => ({
        frequency: i.frequency,
        ...(i.day !== undefined && { day: i.day }),
        hour: i.hour,
        retentionSeconds: i.retentionSeconds,
      }));
    expect(await shown()).toEqual(wanted);

    await h.platform.setBackupSchedule("proj-alpha", main, [
      { frequency: "daily", hour: 1, retentionSeconds: 3600 },
    ]);
    await eventually(
      async () => (JSON.stringify(await shown()) === JSON.stringify(wanted) ? true : undefined),
      {
        what: "the declared schedule back on the platform",
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );
  });
});
