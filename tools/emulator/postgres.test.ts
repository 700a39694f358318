// The real Postgres behind the emulator's connection URIs: a client connects
// with nothing but the URI, the role's current password is checked, a child
// branch starts with its parent's rows, and a restore brings them back.
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";

const P = "/projects/demo-project";
const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => undefined)));
});

async function uriFor(h: Harness, query: string): Promise<string> {
  const res = await h.api("GET", `${P}/connection_uri?database_name=neondb&role_name=neondb_owner&${query}`);
  expect(res.status).toBe(200);
  return res.body.uri as string;
}

async function connect(uri: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: uri });
  // A dropped connection (a restore) surfaces on the next query; the idle client's event is expected.
  client.on("error", () => undefined);
  clients.push(client);
  await client.connect();
  return client;
}

/** Connects and answers the refusal's SQLSTATE, or "connected". */
async function attempt(uri: string): Promise<string> {
  try {
    await connect(uri);
    return "connected";
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

const withPassword = (uri: string, password: string): string => {
  const url = new URL(uri);
  url.password = password;
  return url.toString();
};

/** A branch of main with a read-write endpoint, ready (its create_branch and start_compute done). */
async function childBranch(h: Harness, name: string): Promise<string> {
  const { main } = await branchesOf(h);
  const created = await h.api("POST", `${P}/branches`, {
    branch: { parent_id: main, name },
    endpoints: [{ type: "read_write" }],
  });
  expect(created.status).toBe(201);
  h.clock.advance(5000);
  return created.body.branch.id as string;
}

describe("the Postgres behind connection URIs", () => {
  it("is where the admin API says it serves an endpoint, which a URI names too (no password needed)", async () => {
    const h = await startHarness();
    const endpoint = (await h.api("GET", `${P}/endpoints`)).body.endpoints[0].id as string;
    for (const pooled of [false, true]) {
      const at = await h.admin("GET", `/endpoints/${endpoint}/postgres${pooled ? "?pooled=true" : ""}`);
      expect(at.status).toBe(200);
      const uri = new URL(await uriFor(h, pooled ? "pooled=true" : ""));
      expect(at.body).toEqual({ host: uri.hostname, port: Number(uri.port), sslmode: "disable" });
    }
    expect((await h.admin("GET", "/endpoints/ep-missing/postgres")).status).toBe(404);
  });

  it("serves the branch's database at the direct and the pooled URI", async () => {
    const h = await startHarness();
    const direct = await uriFor(h, "");
    expect(direct).toMatch(/^postgresql:\/\/neondb_owner:npg_\w+@127\.0\.0\.1:\d+\/neondb\?sslmode=disable$/);
    const client = await connect(direct);
    const row = (await client.query("select current_database() as db, current_user as role")).rows[0];
    expect(row).toEqual({ db: "neondb", role: "neondb_owner" });
    await client.query("create table items (name text)");
    await client.query("insert into items values ('from direct')");
    const pooledUri = await uriFor(h, "pooled=true");
    expect(new URL(pooledUri).port).not.toBe(new URL(direct).port);
    const pooled = await connect(pooledUri);
    expect((await pooled.query("select name from items")).rows).toEqual([{ name: "from direct" }]);
    // Connecting woke the seeded idle endpoint, as the platform's proxy does.
    h.clock.advance(5000);
    expect((await h.api("GET", `${P}/endpoints`)).body.endpoints[0].current_state).toBe("active");
  });

  it("serves a pool of concurrent connections, one transaction at a time", async () => {
    const h = await startHarness();
    const pool = new pg.Pool({ connectionString: await uriFor(h, "pooled=true"), max: 4 });
    try {
      await pool.query("create table hits (n int)");
      await Promise.all(
        Array.from({ length: 20 }, async (_, n) => {
          const client = await pool.connect();
          try {
            await client.query("begin");
            await client.query("insert into hits values ($1)", [n]);
            await client.query("commit");
          } finally {
            client.release();
          }
        }),
      );
      expect((await pool.query("select count(*)::int as n, sum(n)::int as total from hits")).rows).toEqual([
        { n: 20, total: 190 },
      ]);
    } finally {
      await pool.end();
    }
  });

  it("refuses a wrong password, an unknown role and an unknown database", async () => {
    const h = await startHarness();
    const uri = await uriFor(h, "");
    expect(await attempt(withPassword(uri, "npg_wrongwrongwr"))).toBe("28P01");
    const stranger = new URL(uri);
    stranger.username = "stranger";
    expect(await attempt(stranger.toString())).toBe("28P01");
    const elsewhere = new URL(uri);
    elsewhere.pathname = "/nowhere";
    expect(await attempt(elsewhere.toString())).toBe("3D000");
  });

  it("lets in only the addresses of the project's IP allow-list, with the platform proxy's words", async () => {
    const h = await startHarness();
    const uri = await uriFor(h, "");
    const allow = async (allowedIps: object) => {
      h.clock.advance(5000); // what runs on the project (a connection's wake-up) is done
      const patched = await h.api("PATCH", P, { project: { settings: { allowed_ips: allowedIps } } });
      expect(patched.status).toBe(200);
      h.clock.advance(5000);
    };
    // A list without loopback: psql from 127.0.0.1 is refused before its password is looked at.
    await allow({ ips: ["203.0.113.0/24", "198.51.100.7"] });
    const refused = await connect(uri).then(
      () => undefined,
      (err: unknown) => err as { code?: string; message?: string },
    );
    expect(refused?.code).toBe("XX000");
    expect(refused?.message).toBe(
      "This IP address 127.0.0.1 is not allowed to connect to this endpoint. Please add it to the allowed list in the Neon console. Make sure to check for IPv4 or IPv6 addresses.",
    );
    expect(await attempt(withPassword(uri, "npg_wrongwrongwr"))).toBe("XX000");
    // An address, a block or a range that holds it lets it in.
    for (const ips of [["127.0.0.1"], ["127.0.0.0/8"], ["127.0.0.1-127.0.0.9"]]) {
      await allow({ ips });
      expect(await attempt(uri)).toBe("connected");
    }
    // For protected branches only: the unprotected main lets everyone in, until it is protected.
    await allow({ ips: ["203.0.113.0/24"], protected_branches_only: true });
    expect(await attempt(uri)).toBe("connected");
    const { main } = await branchesOf(h);
    h.clock.advance(5000);
    expect((await h.api("PATCH", `${P}/branches/${main}`, { branch: { protected: true } })).status).toBe(200);
    h.clock.advance(5000);
    expect(await attempt(uri)).toBe("XX000");
    // An empty list restricts nothing.
    await allow({ ips: [] });
    expect(await attempt(uri)).toBe("connected");
  });

  it("a deleted endpoint's ports close with its connections", async () => {
    const h = await startHarness();
    const uri = await uriFor(h, "");
    const session = await connect(uri);
    h.clock.advance(5000);
    const endpoint = (await h.api("GET", `${P}/endpoints`)).body.endpoints[0];
    expect((await h.api("DELETE", `${P}/endpoints/${endpoint.id}`)).status).toBe(200);
    await expect(session.query("select 1")).rejects.toThrow();
    expect(await attempt(uri)).toBe("ECONNREFUSED");
  });

  it("after reset_password the old password works until the reset's operations finish, then only the new one, and open sessions are dropped", async () => {
    const h = await startHarness();
    const { main } = await branchesOf(h);
    const old = await uriFor(h, "");
    const session = await connect(old);
    h.clock.advance(5000); // its wake-up done
    const reset = await h.api("POST", `${P}/branches/${main}/roles/neondb_owner/reset_password`);
    expect(reset.status).toBe(200);
    expect(reset.body.operations.length).toBeGreaterThan(0);
    const fresh = withPassword(old, reset.body.role.password as string);
    expect(await attempt(old)).toBe("connected");
    expect(await attempt(fresh)).toBe("28P01");
    expect((await session.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
    h.clock.advance(5000);
    expect(await attempt(old)).toBe("28P01");
    // The platform drops the compute's connections when it applies the change.
    await expect(session.query("select 1")).rejects.toThrow();
    expect(await attempt(fresh)).toBe("connected");
    expect(await uriFor(h, "")).toBe(fresh);
  });

  it("a child branch starts with its parent's rows and goes its own way; a restore brings the parent's back", async () => {
    const h = await startHarness();
    const parent = await connect(await uriFor(h, ""));
    await parent.query("create table items (name text)");
    await parent.query("insert into items values ('parent row')");
    h.clock.advance(5000);
    const childId = await childBranch(h, "preview");
    const child = await connect(await uriFor(h, `branch_id=${childId}`));
    expect((await child.query("select name from items")).rows).toEqual([{ name: "parent row" }]);
    await child.query("insert into items values ('child row')");
    expect((await parent.query("select count(*)::int as n from items")).rows).toEqual([{ n: 1 }]);

    h.clock.advance(5000);
    const { main } = await branchesOf(h);
    const restored = await h.api("POST", `${P}/branches/${childId}/restore`, { source_branch_id: main });
    expect(restored.status).toBe(200);
    // The platform drops the branch's connections on a restore.
    await expect(child.query("select 1")).rejects.toThrow();
    h.clock.advance(5000);
    const again = await connect(await uriFor(h, `branch_id=${childId}`));
    expect((await again.query("select name from items")).rows).toEqual([{ name: "parent row" }]);
  });

  it("a database stopped when idle keeps its rows; a renamed database keeps them too", async () => {
    const h = await startHarness({ postgres: { idleMs: 20 } });
    const { main } = await branchesOf(h);
    await h.api("POST", `${P}/branches/${main}/databases`, {
      database: { name: "shop", owner_name: "neondb_owner" },
    });
    h.clock.advance(5000);
    const shop = `${P}/connection_uri?database_name=shop&role_name=neondb_owner`;
    const first = await connect((await h.api("GET", shop)).body.uri as string);
    await first.query("create table orders (id int); insert into orders values (42)");
    await first.end();
    await expect.poll(async () => (await h.admin("GET", "/stats")).body.postgres.databases_running).toBe(0);
    h.clock.advance(5000); // the endpoint's wake-up done
    const renamed = await h.api("PATCH", `${P}/branches/${main}/databases/shop`, {
      database: { name: "store" },
    });
    expect(renamed.status).toBe(200);
    h.clock.advance(5000);
    const store = `${P}/connection_uri?database_name=store&role_name=neondb_owner`;
    const again = await connect((await h.api("GET", store)).body.uri as string);
    expect((await again.query("select id from orders")).rows).toEqual([{ id: 42 }]);
  });
});
