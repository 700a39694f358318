// A seed's SQL is the data its project's primary branch starts with: read back through the
// platform's own connection URI as the owner role, copied into a child branch, masked in an
// anonymized one, and not run again over a world restored from its state file.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { Reply } from "../../test/emulator/harness.ts";
import { startEmulator, type Emulator } from "./emulator.ts";

const dirs: string[] = [];
const emulators: Emulator[] = [];
afterEach(async () => {
  await Promise.all(emulators.splice(0).map((e) => e.close()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const seed = {
  projects: [
    {
      id: "shop",
      name: "shop",
      role_name: "app",
      database_name: "shop",
      sql: "create table customers (id int primary key, email text not null); insert into customers values (1, 'ada@example.com'), (2, 'alan@example.com')",
    },
  ],
};

async function call(e: Emulator, method: string, path: string, body?: unknown): Promise<Reply> {
  const res = await fetch(`${e.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${e.bootstrapKey}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

async function emails(e: Emulator, branchId?: string): Promise<string[]> {
  const branch = branchId === undefined ? "" : `&branch_id=${branchId}`;
  const { body } = await call(
    e,
    "GET",
    `/projects/shop/connection_uri?database_name=shop&role_name=app${branch}`,
  );
  const client = new pg.Client({ connectionString: body.uri as string });
  await client.connect();
  try {
    return (await client.query<{ email: string }>("select email from customers order by id")).rows.map(
      (r) => r.email,
    );
  } finally {
    await client.end();
  }
}

describe("a seed's SQL", () => {
  it("is the primary branch's data, the owner's, copied to a child branch and masked in an anonymized one", async () => {
    const e = await startEmulator({ rateLimits: false, operationDurationMs: 10, seed });
    emulators.push(e);
    expect(await emails(e)).toEqual(["ada@example.com", "alan@example.com"]);

    const child = await call(e, "POST", "/projects/shop/branches", {
      branch: { name: "copy" },
      endpoints: [{ type: "read_write" }],
    });
    expect(child.status).toBe(201);
    const childId = child.body.branch.id as string;
    await new Promise((r) => setTimeout(r, 300));
    expect(await emails(e, childId)).toEqual(["ada@example.com", "alan@example.com"]);

    const masked = await call(e, "POST", "/projects/shop/branch_anonymized", {
      masking_rules: [
        {
          database_name: "shop",
          schema_name: "public",
          table_name: "customers",
          column_name: "email",
          masking_function: "anon.fake_email()",
        },
      ],
      start_anonymization: true,
    });
    expect(masked.status).toBe(201);
    const maskedId = masked.body.branch.id as string;
    let state = "";
    for (let i = 0; i < 100 && state !== "anonymized"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      state = (await call(e, "GET", `/projects/shop/branches/${maskedId}/anonymized_status`)).body
        .state as string;
    }
    expect(state).toBe("anonymized");
    const shown = await emails(e, maskedId);
    expect(shown).toHaveLength(2);
    for (const email of shown) {
      expect(email).toMatch(/^[^@\s]+@[^@\s]+\.[a-z]+$/);
      expect(["ada@example.com", "alan@example.com"]).not.toContain(email);
    }
  });

  it("is not run again over a world restored from its state file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "emulator-seed-data-"));
    dirs.push(dir);
    const options = {
      rateLimits: false as const,
      operationDurationMs: 10,
      seed,
      stateFile: join(dir, "world.json"),
    };
    const first = await startEmulator(options);
    const { body } = await call(
      first,
      "GET",
      "/projects/shop/connection_uri?database_name=shop&role_name=app",
    );
    const client = new pg.Client({ connectionString: body.uri as string });
    await client.connect();
    await client.query("delete from customers where id = 1");
    await client.end();
    await first.close();

    const second = await startEmulator(options);
    emulators.push(second);
    expect(await emails(second)).toEqual(["alan@example.com"]);
  });
});
