// A database per tenant, as docs/project.md tells it: the cluster administrator applies the
// sample's CredentialsGrant, two tenants' overlays of samples/tenants/ are applied as kustomize
// renders them (each in a namespace of its own, renamed for this run), and the operator, acting
// with its default credentials from its own namespace, gives each a project of its own and a
// connection Secret, and keeps each tenant's default branch on a nightly backup schedule; the
// sample's restore, applied in a tenant's namespace, makes a branch with the data its snapshot kept
// and a Secret to it. Removing one tenant removes its namespace and resources but keeps its project
// and data on the platform; the other tenant is untouched.
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig } from "../../src/config.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { PlatformClient } from "../../src/platform/index.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { kustomizeOverlay, repoRoot, toolsTimeoutMs, type Loose, type Manifest } from "../deploy/render.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";
import { LogCapture, testSeed } from "../support/operator.ts";
import { until, type ProjectObject } from "./scenario.ts";

const run = randomBytes(3).toString("hex");
const tenants = ["acme", "globex"] as const;
type Tenant = (typeof tenants)[number];

let emulator: Emulator;
let platform: PlatformClient;
let operator: RunningOperator | undefined;
let ops: string;
let grantName: string;
const rendered = new Map<Tenant, Manifest[]>();
const logs = new LogCapture();

const namespaceOf = (tenant: Tenant) => `tenant-${tenant}-${run}`;
const apply = (objects: object[]) =>
  kubectl(["apply", "--server-side", "-f", "-"], { input: objects.map((o) => JSON.stringify(o)).join("\n") });
const read = (tenant: Tenant) => async () =>
  JSON.parse(
    await kubectl(["get", "project", "db", "-n", namespaceOf(tenant), "-o", "json"]),
  ) as ProjectObject;

async function secret(tenant: Tenant): Promise<Record<string, string> | undefined> {
  const text = await kubectl([
    "get",
    "secret",
    "db-connection",
    "-n",
    namespaceOf(tenant),
    "-o",
    "json",
    "--ignore-not-found",
  ]);
  if (!text) return undefined;
  const data = (JSON.parse(text) as { data: Record<string, string> }).data;
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
}

beforeAll(async () => {
  emulator = await startEmulator({ rateLimits: false, operationDurationMs: 150, seed: testSeed });
  platform = new PlatformClient({ baseUrl: emulator.url, apiKey: emulator.bootstrapKey });
  ops = await createNamespace("tenants-ops", { granted: false });
  await applyCredentialsSecret(ops, "neon-api-key", emulator.bootstrapKey);
  // Each tenant's overlay as kustomize renders it, in a namespace of this run's (the Namespace
  // object renamed with it, its label kept).
  for (const tenant of tenants) {
    rendered.set(
      tenant,
      await kustomizeOverlay({ resources: [`samples/tenants/${tenant}`], namespace: namespaceOf(tenant) }),
    );
  }
  // The cluster administrator's grant, named for this run.
  const grant: Loose = parse(await readFile(join(repoRoot, "samples", "tenants", "grant.yaml"), "utf8"));
  grantName = `${grant.metadata.name}-${run}`;
  await apply([{ ...grant, metadata: { name: grantName } }]);
  const config = loadConfig([
    `--platform-base-url=${emulator.url}`,
    `--namespaces=${tenants.map(namespaceOf).join(",")}`,
    `--default-credentials-secret=${ops}/neon-api-key`,
    `--leader-election-namespace=${ops}`,
    "--no-leader-election",
    "--metrics-address=127.0.0.1:0",
  ]);
  operator = await startOperator(config, logs.logger, { kubeConfig: adminKubeConfig(), pollIntervalMs: 100 });
}, toolsTimeoutMs);

afterAll(async () => {
  await operator?.stop();
  await platform?.close();
  await emulator?.close();
  if (grantName)
    await kubectl(["delete", "credentialsgrant", grantName, "--wait=false"]).catch(() => undefined);
  for (const ns of [ops, ...tenants.map(namespaceOf)])
    if (ns)
      await kubectl(["delete", "namespace", ns, "--wait=false", "--ignore-not-found"]).catch(() => undefined);
});

describe("a database per tenant (samples/tenants/)", () => {
  const ids = new Map<Tenant, string>();

  it("two tenants applied: each gets a project of its own, Ready, and a connection Secret to it", async () => {
    for (const tenant of tenants) await apply(rendered.get(tenant) ?? []);
    for (const tenant of tenants) {
      const ready = await until(read(tenant), "True");
      const id = ready.status?.projectId ?? "";
      ids.set(tenant, id);
      const onPlatform = await platform.getProject(id);
      expect(onPlatform).toMatchObject({
        name: `tenant-${tenant}`,
        regionId: "aws-us-east-2",
        pgVersion: 17,
      });
      const data = await eventually(() => secret(tenant), { what: `tenant ${tenant}'s Secret` });
      expect(data).toMatchObject({ PGDATABASE: "app", PGUSER: "app_owner" });
      expect(logs.text()).not.toContain(data.PGPASSWORD);
      // The tenant's app connects with it, to its own database as its own role; globex's
      // allow-list (198.51.100.0/24) keeps out a client from anywhere else, this test included.
      const client = new pg.Client({ connectionString: data.DATABASE_URL });
      if (tenant === "globex") {
        await expect(client.connect()).rejects.toThrow(
          "This IP address 127.0.0.1 is not allowed to connect to this endpoint.",
        );
        continue;
      }
      await client.connect();
      try {
        const { rows } = await client.query<{ db: string; me: string }>(
          "select current_database() as db, current_user as me",
        );
        expect(rows[0]).toEqual({ db: "app", me: "app_owner" });
      } finally {
        await client.end();
      }
    }
    expect(new Set(ids.values()).size).toBe(tenants.length);
    // What one tenant's overlay changes is its own: globex's allow-list, acme's none.
    const globex = await platform.getProject(ids.get("globex") ?? "");
    expect(globex.settings?.allowedIps?.ips).toEqual(["198.51.100.0/24"]);
    const acme = await platform.getProject(ids.get("acme") ?? "");
    expect(acme.settings?.allowedIps?.ips ?? []).toEqual([]);
  });

  it("each tenant's default branch has the nightly backup schedule of backups.yaml", async () => {
    for (const tenant of tenants) {
      const id = ids.get(tenant) ?? "";
      const main = (await platform.listBranches(id)).find((b) => b.default)?.id ?? "";
      await eventually(
        async () => {
          const schedule = await platform.getBackupSchedule(id, main);
          return schedule.length > 0 ? schedule : undefined;
        },
        { what: `tenant ${tenant}'s backup schedule` },
      );
      expect(
        (await platform.getBackupSchedule(id, main)).map((i) => [i.frequency, i.hour, i.retentionSeconds]),
      ).toEqual([["daily", 2, 7 * 24 * 3600]]);
    }
  });

  it("a restore (samples/tenants/restore) brings back the data its snapshot kept, beside production", async () => {
    const sql = async (url: string, text: string) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query<{ note: string }>(text)).rows.map((r) => r.note);
      } finally {
        await client.end();
      }
    };
    const production = (await secret("acme"))?.DATABASE_URL ?? "";
    await sql(production, "create table notes (note text)");
    await sql(production, "insert into notes values ('kept')");
    await apply(
      await kustomizeOverlay({ resources: ["samples/tenants/restore"], namespace: namespaceOf("acme") }),
    );
    const snapshot = async () => {
      const obj = JSON.parse(
        await kubectl(["get", "snapshot", "restore-point", "-n", namespaceOf("acme"), "-o", "json"]),
      ) as { status?: { conditions?: { type: string; status: string }[] } };
      return obj.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? obj : undefined;
    };
    await eventually(snapshot, { what: "the Snapshot restore-point Ready" });
    await sql(production, "insert into notes values ('written since')");
    const restored = await eventually(
      async () => {
        const text = await kubectl([
          "get",
          "secret",
          "db-restored",
          "-n",
          namespaceOf("acme"),
          "--ignore-not-found",
          "-o",
          "json",
        ]);
        if (!text) return undefined;
        const data = (JSON.parse(text) as { data: Record<string, string> }).data;
        return Buffer.from(data.DATABASE_URL ?? "", "base64").toString();
      },
      { what: "the connection Secret db-restored", timeoutMs: 60_000 },
    );
    expect(await sql(restored, "select note from notes order by note")).toEqual(["kept"]);
    expect(await sql(production, "select note from notes order by note")).toEqual(["kept", "written since"]);
  });

  it("removing a tenant removes its namespace and Secret, and keeps its project and data on the platform", async () => {
    // `kubectl delete -k samples/tenants/acme`, as rendered for this run.
    await kubectl(["delete", "--wait=true", "--timeout=120s", "-f", "-"], {
      input: (rendered.get("acme") ?? []).map((o) => JSON.stringify(o)).join("\n"),
    });
    const gone = await kubectl(["get", "namespace", namespaceOf("acme"), "--ignore-not-found"]);
    expect(gone).toBe("");
    const kept = await platform.getProject(ids.get("acme") ?? "");
    expect(kept.name).toBe("tenant-acme");
    expect((await platform.listBranches(kept.id)).filter((b) => b.default)).toHaveLength(1);
    // The other tenant goes on as it was.
    await until(read("globex"), "True");
    expect(await secret("globex")).toBeDefined();
  });
});
