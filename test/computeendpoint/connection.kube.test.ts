// A user asks a ComputeEndpoint for a connection Secret and gets one a pod can use as it is:
// every key, the platform's password, a real connection (the emulator's Postgres), rewritten when needed and only then, rotated on demand,
// reset only with consent, gone with the resource, and the password nowhere else.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Secret } from "../../src/controllers/managed/credentials.ts";
import { eventually, kubectl } from "../support/kube.ts";
import { startOperatorHarness, testSeed, type OperatorHarness } from "../support/operator.ts";
import { condition, endpoint, factory, reader } from "./scenario.ts";

let h: OperatorHarness;
const { resource, readyWith } = reader(() => h);

/** Every password a Secret of this file held: none may show up anywhere else. */
const passwords = new Set<string>();

const connectionUri = "GET /projects/:project_id/connection_uri";
const resetPassword = "POST /projects/:project_id/branches/:branch_id/roles/:role_name/reset_password";

/** Resets the platform carried out (a 423 while the project was locked is none). */
function resets(): number {
  return h.emulator.requestLog.counters().by_route[resetPassword]?.["200"] ?? 0;
}

function served(route: string): number {
  const byStatus = h.emulator.requestLog.counters().by_route[route] ?? {};
  return Object.values(byStatus).reduce((sum, n) => sum + n, 0);
}

async function secretData(name: string): Promise<Record<string, string> | undefined> {
  const out = await kubectl(["get", "secret", name, "-n", h.namespace, "-o", "json", "--ignore-not-found"]);
  if (!out.trim()) return undefined;
  const secret = JSON.parse(out) as Secret;
  const data = Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
  );
  if (data.PGPASSWORD) passwords.add(data.PGPASSWORD);
  return data;
}

async function secret(name: string): Promise<Secret> {
  return JSON.parse(await kubectl(["get", "secret", name, "-n", h.namespace, "-o", "json"])) as Secret;
}

/** The Secret once it holds `check`. */
function secretWith(
  name: string,
  check: (data: Record<string, string>) => boolean = () => true,
): Promise<Record<string, string>> {
  return eventually(
    async () => {
      const data = await secretData(name);
      return data && check(data) ? data : undefined;
    },
    { what: `Secret ${name}`, intervalMs: 200, timeoutMs: 30_000 },
  );
}

/** Connects as a driver would, runs a query, and says who and where it is. */
async function whoAmI(config: pg.ClientConfig): Promise<{ user: string; database: string }> {
  const client = new pg.Client(config);
  client.on("error", () => undefined);
  try {
    await client.connect();
    const result = await client.query<{ user: string; database: string }>(
      "select current_user as user, current_database() as database",
    );
    return result.rows[0] ?? { user: "", database: "" };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A merge patch of a ComputeEndpoint's spec, as `kubectl patch --type=merge` sends it. */
async function patchSpec(name: string, spec: Record<string, unknown>): Promise<void> {
  await kubectl(["patch", "cep", name, "-n", h.namespace, "--type=merge", "-p", JSON.stringify({ spec })]);
}

const mainBranch = async (projectId: string) =>
  (await h.platform.listBranches(projectId)).find((b) => b.default)?.id ?? "";

beforeAll(async () => {
  h = await startOperatorHarness(factory, {
    prefix: "conn",
    emulator: {
      seed: {
        projects: [
          ...testSeed.projects,
          // A project that keeps no passwords: only a reset gives one.
          { id: "proj-vault", name: "vault", store_passwords: false },
        ],
      },
    },
  });
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("connection Secret", () => {
  it("is written with every key a driver reads, the platform's password, owned by the ComputeEndpoint", async () => {
    await h.apply(
      endpoint("web", {
        branchId: "br-dev",
        pooler: { enabled: true },
        connectionSecret: { name: "web-db", role: "neondb_owner", database: "neondb" },
      }),
    );
    const obj = await readyWith("web", (o) => o.status?.connectionSecret?.name === "web-db");
    const data = await secretWith("web-db");
    expect(Object.keys(data).sort()).toEqual([
      "DATABASE_URL",
      "DATABASE_URL_POOLED",
      "PGDATABASE",
      "PGHOST",
      "PGPASSWORD",
      "PGPORT",
      "PGSSLMODE",
      "PGUSER",
    ]);
    const password = await h.platform.revealPassword("proj-alpha", "br-dev", "neondb_owner");
    expect(data.PGPASSWORD).toBe(password);
    expect(data).toMatchObject({ PGUSER: "neondb_owner", PGDATABASE: "neondb" });
    // The URLs are what the platform itself gives for this role and database.
    const direct = await h.platform.connectionUri("proj-alpha", {
      branchId: "br-dev",
      databaseName: "neondb",
      roleName: "neondb_owner",
    });
    const pooled = await h.platform.connectionUri("proj-alpha", {
      branchId: "br-dev",
      databaseName: "neondb",
      roleName: "neondb_owner",
      pooled: true,
    });
    const same = (a: string, b: string) => {
      const [x, y] = [new URL(a), new URL(b)];
      return (
        [
          x.username,
          x.password,
          x.hostname,
          x.port || "5432",
          x.pathname,
          x.searchParams.get("sslmode"),
        ].join(" ") ===
        [
          y.username,
          y.password,
          y.hostname,
          y.port || "5432",
          y.pathname,
          y.searchParams.get("sslmode"),
        ].join(" ")
      );
    };
    expect(same(data.DATABASE_URL ?? "", direct)).toBe(true);
    expect(same(data.DATABASE_URL_POOLED ?? "", pooled)).toBe(true);
    const platformDirect = new URL(direct);
    expect(data).toMatchObject({
      PGHOST: platformDirect.hostname,
      PGPORT: platformDirect.port || "5432",
      PGSSLMODE: platformDirect.searchParams.get("sslmode"),
    });
    const s = await secret("web-db");
    expect(s.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: "ComputeEndpoint",
        name: "web",
        uid: obj.metadata.uid,
        controller: true,
      }),
    ]);
    const managers = JSON.parse(
      await kubectl(["get", "secret", "web-db", "-n", h.namespace, "-o", "json", "--show-managed-fields"]),
    ) as { metadata: { managedFields?: { manager: string }[] } };
    expect(managers.metadata.managedFields?.map((f) => f.manager)).toContain("neon-cloud-operator");
  });

  it("lets a client connect with nothing but the Secret's values, direct, pooled and as PG*, and query", async () => {
    const data = await secretWith("web-db");
    for (const url of [data.DATABASE_URL ?? "", data.DATABASE_URL_POOLED ?? ""]) {
      expect(await whoAmI({ connectionString: url })).toEqual({ user: "neondb_owner", database: "neondb" });
    }
    // The libpq variables, as a driver reads them from the environment.
    expect(
      await whoAmI({
        host: data.PGHOST,
        port: Number(data.PGPORT),
        user: data.PGUSER,
        password: data.PGPASSWORD,
        database: data.PGDATABASE,
        ssl: data.PGSSLMODE === "disable" ? false : { rejectUnauthorized: false },
      }),
    ).toEqual({ user: "neondb_owner", database: "neondb" });
  });

  it("asks the platform again only when something the Secret depends on changes", async () => {
    const before = served(connectionUri);
    // A change of the endpoint (a new generation, an update, its operations, polls) reads nothing.
    await patchSpec("web", { computeUnits: { min: 0.5 } });
    await readyWith("web", (o) => o.status?.computeUnits?.min === 0.5);
    expect(served(connectionUri)).toBe(before);
    // Another database: read once, and the Secret says so.
    await patchSpec("web", { connectionSecret: { database: "postgres" } });
    // The branch has no database "postgres": the platform refuses the read, the resource says so.
    const refused = await eventually(
      async () => {
        const c = condition(await resource("web"), "Ready");
        return c?.status === "False" ? c : undefined;
      },
      { what: "web refused", intervalMs: 200 },
    );
    expect(refused.reason).toBe("ConnectionTargetNotFound");
    expect(refused.message).toContain('database "postgres"');
    expect(served(connectionUri)).toBeGreaterThan(before);
    await patchSpec("web", { connectionSecret: { database: "neondb" } });
    await readyWith("web");
  });

  it("is written again when someone deletes it", async () => {
    await kubectl(["delete", "secret", "web-db", "-n", h.namespace]);
    const data = await secretWith("web-db");
    expect(data.PGPASSWORD).toBe(await h.platform.revealPassword("proj-alpha", "br-dev", "neondb_owner"));
  });

  it("rotates the password once per new rotatePasswordAt value, after the reset's operations", async () => {
    const before = await secretWith("web-db");
    const old = before.PGPASSWORD;
    const resetsBefore = resets();
    await kubectl([
      "annotate",
      "cep",
      "web",
      "-n",
      h.namespace,
      "neoncloud.dev/rotatePasswordAt=first",
      "--overwrite",
    ]);
    const data = await secretWith("web-db", (d) => d.PGPASSWORD !== old);
    const obj = await readyWith("web", (o) => o.status?.connectionSecret?.passwordRotatedAt === "first");
    expect(obj.status?.connectionSecret?.passwordReset).toBeUndefined();
    expect(data.PGPASSWORD).toBe(await h.platform.revealPassword("proj-alpha", "br-dev", "neondb_owner"));
    expect(new URL(data.DATABASE_URL ?? "").password).toBe(encodeURIComponent(data.PGPASSWORD ?? ""));
    // The new Secret works at once; the old password is refused (invalid_password), direct and pooled.
    expect(await whoAmI({ connectionString: data.DATABASE_URL ?? "" })).toMatchObject({
      user: "neondb_owner",
    });
    await expect(whoAmI({ connectionString: before.DATABASE_URL ?? "" })).rejects.toMatchObject({
      code: "28P01",
    });
    await expect(whoAmI({ connectionString: before.DATABASE_URL_POOLED ?? "" })).rejects.toMatchObject({
      code: "28P01",
    });
    expect(resets()).toBe(resetsBefore + 1);
    // The reset's operations had finished when the new password was written.
    const { operations: ops } = await h.platform.listOperationsPage("proj-alpha", { limit: 100 });
    const applied = ops.filter((op) => op.action === "apply_config" && op.branchId === "br-dev");
    expect(applied.length).toBeGreaterThan(0);
    expect(applied.every((op) => op.status === "finished" || op.status === "skipped")).toBe(true);
    // The same value on the next passes does nothing (a new generation is one more pass for sure).
    await patchSpec("web", { connectionConfigMapName: "web-conn" });
    await readyWith("web");
    expect(resets()).toBe(resetsBefore + 1);
  });

  it("a ConfigMap beside the Secret states the same address (host, port, sslmode) the Secret does", async () => {
    await readyWith("web", (o) => o.status?.connectionSecret?.address !== undefined);
    const data = await secretWith("web-db");
    const cm = await eventually(
      async () => {
        const out = await kubectl([
          "get",
          "configmap",
          "web-conn",
          "-n",
          h.namespace,
          "--ignore-not-found",
          "-o",
          "json",
        ]);
        const map = out.trim() ? (JSON.parse(out) as { data: Record<string, string> }) : undefined;
        return map?.data.port === data.PGPORT ? map : undefined;
      },
      { what: "the ConfigMap with the Secret's port" },
    );
    expect({ host: cm.data.host, port: cm.data.port, sslmode: cm.data.sslmode }).toEqual({
      host: data.PGHOST,
      port: data.PGPORT,
      sslmode: data.PGSSLMODE,
    });
  });

  it("moves to a new name: the old Secret is deleted, the new one written", async () => {
    const patch = (name: string) => patchSpec("web", { connectionSecret: { name } });
    await patch("web-db-2");
    const data = await secretWith("web-db-2");
    expect(data.PGPASSWORD).toBe(await h.platform.revealPassword("proj-alpha", "br-dev", "neondb_owner"));
    await readyWith("web", (o) => o.status?.connectionSecret?.name === "web-db-2");
    expect(await secretData("web-db")).toBeUndefined();
    await patch("web-db");
    await secretWith("web-db");
    await readyWith("web", (o) => o.status?.connectionSecret?.name === "web-db");
    expect(await secretData("web-db-2")).toBeUndefined();
  });

  it("reports PasswordNotStored without consent, and with consent resets once and writes the Secret", async () => {
    const branchId = await mainBranch("proj-vault");
    const resetsBefore = resets();
    // The project's default branch and the read-write endpoint every new project gets, adopted.
    const endpointId = (await h.platform.listEndpoints("proj-vault"))[0]?.id;
    await h.apply({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "ComputeEndpoint",
      metadata: { name: "vault" },
      spec: {
        projectId: "proj-vault",
        branchId,
        endpointId,
        connectionSecret: { name: "vault-db", role: "neondb_owner", database: "neondb" },
      },
    });
    const refused = await eventually(
      async () => {
        const c = condition(await resource("vault"), "Ready");
        return c?.reason === "PasswordNotStored" ? c : undefined;
      },
      { what: "PasswordNotStored", intervalMs: 200 },
    );
    expect(refused.message).toContain("spec.connectionSecret.allowPasswordReset");
    expect(await secretData("vault-db")).toBeUndefined();
    expect(resets()).toBe(resetsBefore);

    await patchSpec("vault", { connectionSecret: { allowPasswordReset: true } });
    const data = await secretWith("vault-db");
    const obj = await readyWith("vault", (o) => o.status?.connectionSecret?.name === "vault-db");
    expect(data.PGUSER).toBe("neondb_owner");
    expect(data.PGPASSWORD?.length).toBeGreaterThan(8);
    expect(resets()).toBe(resetsBefore + 1);
    // The platform names no address without a stored password (connection_uri answers 412), so
    // the Secret has the platform's own: the endpoint's host and its -pooler host on 5432, TLS.
    await expect(
      h.platform.connectionUri("proj-vault", { branchId, databaseName: "neondb", roleName: "neondb_owner" }),
    ).rejects.toMatchObject({ status: 412 });
    expect(data).toMatchObject({ PGHOST: obj.status?.host, PGPORT: "5432", PGSSLMODE: "require" });
    expect(new URL(data.DATABASE_URL_POOLED ?? "").hostname).toBe(obj.status?.pooledHost);
    // The emulator's Postgres is not there (it listens on loopback ports): at its address, the
    // Secret's role, password and database connect.
    const res = await fetch(`${h.emulator.adminUrl}/endpoints/${endpointId ?? ""}/postgres`);
    const at = (await res.json()) as { host: string; port: number };
    expect(
      await whoAmI({
        host: at.host,
        port: at.port,
        user: data.PGUSER,
        password: data.PGPASSWORD,
        database: data.PGDATABASE,
      }),
    ).toEqual({ user: "neondb_owner", database: "neondb" });
  });

  it("goes with the ComputeEndpoint", async () => {
    await kubectl(["delete", "cep", "vault", "-n", h.namespace, "--wait=true", "--timeout=60s"]);
    await eventually(async () => ((await secretData("vault-db")) === undefined ? true : undefined), {
      what: "Secret vault-db garbage-collected",
      intervalMs: 200,
      timeoutMs: 60_000,
    });
  });

  it("keeps the password out of logs, events and status", async () => {
    expect(passwords.size).toBeGreaterThanOrEqual(3);
    const events = await kubectl(["get", "events", "-n", h.namespace, "-o", "json"]);
    const status = JSON.stringify((await resource("web")).status);
    const logs = h.logs.text();
    expect(logs.length).toBeGreaterThan(0);
    for (const password of passwords) {
      expect(logs.includes(password), "a password in the operator's log").toBe(false);
      expect(events.includes(password), "a password in an Event").toBe(false);
      expect(status.includes(password), "a password in status").toBe(false);
    }
  });
});
