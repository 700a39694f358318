// The state file: a restarted emulator keeps its world.
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { Reply } from "../../test/emulator/harness.ts";
import { createManualClock } from "./clock.ts";
import { startEmulator } from "./emulator.ts";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** A state file's path in a fresh directory, removed after the test. */
async function newStateFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "emulator-state-"));
  dirs.push(dir);
  return join(dir, "world.json");
}

async function call(url: string, key: string, method = "GET", body?: unknown): Promise<Reply> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

describe("state file", () => {
  it("a restarted emulator keeps projects, endpoints, operations and keys, and the key values still work", async () => {
    const stateFile = await newStateFile();
    const options = {
      stateFile,
      rateLimits: false as const,
      operationDurationMs: 50,
      seed: { projects: [{ id: "kept", name: "kept" }] },
    };

    const first = await startEmulator(options);
    const branch = (await call(`${first.url}/projects/kept/endpoints`, first.bootstrapKey)).body.endpoints[0]
      .branch_id;
    const created = await call(`${first.url}/projects/kept/endpoints`, first.bootstrapKey, "POST", {
      endpoint: { branch_id: branch, type: "read_only", name: "replica" },
    });
    expect(created.status).toBe(201);
    const key = (await call(`${first.url}/api_keys`, first.bootstrapKey, "POST", { key_name: "ci" })).body
      .key as string;
    await first.close();
    expect((await stat(stateFile)).mode & 0o777).toBe(0o600);
    expect(await readFile(stateFile, "utf8")).not.toContain(key);

    const second = await startEmulator(options);
    try {
      expect(second.bootstrapKey).toBe(first.bootstrapKey);
      const endpoints = (await call(`${second.url}/projects/kept/endpoints`, key)).body.endpoints;
      expect(endpoints.map((e: { name?: string }) => e.name)).toContain("replica");
      const op = await call(`${second.url}/projects/kept/operations/${created.body.operations[0].id}`, key);
      expect(op.status).toBe(200);
      expect((await call(`${second.url}/api_keys`, key)).body.map((k: { name: string }) => k.name)).toEqual([
        "bootstrap",
        "ci",
      ]);
    } finally {
      await second.close();
    }
  });

  it("a failed operation awaiting the platform's retry is retried after a restart, and holds the lock until then", async () => {
    const stateFile = await newStateFile();
    const clock = createManualClock();
    const options = {
      clock,
      stateFile,
      rateLimits: false as const,
      seed: { projects: [{ id: "kept", name: "kept" }] },
    };
    const first = await startEmulator(options);
    first.faults.set({ operations: [{ failures: 1, then: "finished", retry_delay_ms: 5000 }] });
    const [seeded] = (await call(`${first.url}/projects/kept/endpoints`, first.bootstrapKey)).body.endpoints;
    const started = await call(
      `${first.url}/projects/kept/endpoints/${seeded.id}/start`,
      first.bootstrapKey,
      "POST",
    );
    const opUrl = (e: typeof first) => `${e.url}/projects/kept/operations/${started.body.operations[0].id}`;
    clock.advance(1000);
    expect((await call(opUrl(first), first.bootstrapKey)).body.operation.status).toBe("failed");
    await first.close();

    const second = await startEmulator(options);
    try {
      const locked = await call(
        `${second.url}/projects/kept/endpoints/${seeded.id}/restart`,
        second.bootstrapKey,
        "POST",
      );
      expect(locked.status).toBe(423);
      clock.advance(6000);
      const op = (await call(opUrl(second), second.bootstrapKey)).body.operation;
      expect(op).toMatchObject({ status: "finished", failures_count: 1 });
    } finally {
      await second.close();
    }
  });

  it("every account and its bootstrap key survive a restart, generated ones included", async () => {
    const stateFile = await newStateFile();
    const options = {
      stateFile,
      rateLimits: false as const,
      seed: { accounts: [{ account: { kind: "organization" as const }, projects: [{ name: "org-owned" }] }] },
    };
    const first = await startEmulator(options);
    const keys = [...first.bootstrapKeys];
    expect(keys).toHaveLength(2);
    await first.close();
    const second = await startEmulator(options);
    try {
      expect([...second.bootstrapKeys]).toEqual(keys);
      for (const [accountId, key] of keys) {
        expect((await call(`${second.url}/auth`, key)).body.account_id).toBe(accountId);
      }
      const [, [, orgKey]] = keys as [unknown, [string, string]];
      const projects = (await call(`${second.url}/projects`, orgKey)).body.projects;
      expect(projects.map((p: { name: string }) => p.name)).toEqual(["org-owned"]);
    } finally {
      await second.close();
    }
  });

  it("a state file written before accounts and retries loads: one user owns everything, a failed operation is final", async () => {
    const stateFile = await newStateFile();
    const options = {
      stateFile,
      rateLimits: false as const,
      seed: { projects: [{ id: "old", name: "old" }] },
    };
    const first = await startEmulator(options);
    const [seeded] = (await call(`${first.url}/projects/old/endpoints`, first.bootstrapKey)).body.endpoints;
    await first.close();
    // Rewrite it as the emulator wrote it before: one `user`, no account ids, a final `failed`.
    const saved = JSON.parse(await readFile(stateFile, "utf8"));
    const user = { id: saved.world.accounts[0].id, name: "Old User", image: "" };
    delete saved.bootstrap_keys;
    delete saved.world.accounts;
    saved.world.user = user;
    for (const key of saved.world.apiKeys) delete key.accountId;
    for (const project of saved.world.projects) delete project.ownerId;
    saved.world.operations.push({
      id: "0b6f3c1e-8a41-4f7e-9d3c-2f1e5a7b9c0d",
      projectId: "old",
      endpointId: seeded.id,
      action: "start_compute",
      status: "failed",
      failuresCount: 1,
      error: "start_compute failed",
      createdMicros: saved.world.savedAt * 1000,
      updatedAt: saved.world.savedAt,
    });
    await writeFile(stateFile, JSON.stringify(saved), { mode: 0o600 });

    const second = await startEmulator(options);
    try {
      expect((await call(`${second.url}/auth`, second.bootstrapKey)).body.account_id).toBe(user.id);
      const op = await call(
        `${second.url}/projects/old/operations/0b6f3c1e-8a41-4f7e-9d3c-2f1e5a7b9c0d`,
        second.bootstrapKey,
      );
      expect(op.body.operation.status).toBe("error");
      const started = await call(
        `${second.url}/projects/old/endpoints/${seeded.id}/start`,
        second.bootstrapKey,
        "POST",
      );
      expect(started.status).toBe(200); // nothing holds the project
    } finally {
      await second.close();
    }
  });

  it("a restarted emulator keeps the roles' passwords, the rows and the ports, so a connection URI still works", async () => {
    const stateFile = await newStateFile();
    const options = {
      stateFile,
      rateLimits: false as const,
      seed: { projects: [{ id: "kept", name: "kept" }] },
    };
    const first = await startEmulator(options);
    const path = "/projects/kept/connection_uri?database_name=neondb&role_name=neondb_owner";
    const uri = (await call(`${first.url}${path}`, first.bootstrapKey)).body.uri as string;
    const client = new pg.Client({ connectionString: uri });
    await client.connect();
    await client.query("create table kept (note text); insert into kept values ('before the restart')");
    await client.end();
    await first.close();

    const second = await startEmulator(options);
    try {
      expect((await call(`${second.url}${path}`, second.bootstrapKey)).body.uri).toBe(uri);
      const again = new pg.Client({ connectionString: uri });
      await again.connect();
      expect((await again.query("select note from kept")).rows).toEqual([{ note: "before the restart" }]);
      await again.end();
    } finally {
      await second.close();
    }
  });

  it("a restart keeps the projects made through the API, the deleted ones within their window, and changed limits", async () => {
    const stateFile = await newStateFile();
    const options = {
      stateFile,
      rateLimits: false as const,
      operationDurationMs: 10,
      clock: createManualClock(),
    };
    const first = await startEmulator(options);
    const [accountId] = first.bootstrapKeys.keys();
    const key = first.bootstrapKey;
    const made = await call(`${first.url}/projects`, key, "POST", {
      project: {
        name: "made",
        settings: { enable_logical_replication: true },
        branch: { annotations: { a: "b" } },
      },
    });
    const doomed = await call(`${first.url}/projects`, key, "POST", { project: { name: "doomed" } });
    const gone = await call(`${first.url}/projects`, key, "POST", { project: { name: "gone" } });
    options.clock.advance(1000);
    for (const id of [doomed.body.project.id, gone.body.project.id]) {
      expect((await call(`${first.url}/projects/${id}`, key, "DELETE")).status).toBe(200);
    }
    await fetch(`${first.adminUrl}/accounts/${accountId}/limits`, {
      method: "PUT",
      body: JSON.stringify({ plan: "free" }),
    });
    await first.close();

    const second = await startEmulator(options);
    try {
      const read = await call(`${second.url}/projects/${made.body.project.id}`, key);
      expect(read.body.project).toMatchObject({
        name: "made",
        settings: { enable_logical_replication: true },
      });
      const branch = await call(
        `${second.url}/projects/${made.body.project.id}/branches/${made.body.branch.id}`,
        key,
      );
      expect(branch.body.annotation.value).toEqual({ a: "b" });
      const recoverable = (await call(`${second.url}/projects?recoverable=true`, key)).body.projects;
      expect(recoverable.map((p: { id: string }) => p.id).sort()).toEqual(
        [doomed.body.project.id, gone.body.project.id].sort(),
      );
      const limits = await fetch(`${second.adminUrl}/accounts/${accountId}/limits`);
      expect(await limits.json()).toMatchObject({ plan: "free", max_history_retention_seconds: 21_600 });
      expect(
        (await call(`${second.url}/projects/${doomed.body.project.id}/recover`, key, "POST")).status,
      ).toBe(200);
      // The recovery window is counted from the deletion, across the restart: this one is purged.
      expect((await call(`${second.url}/projects/${doomed.body.project.id}`, key, "DELETE")).status).toBe(
        200,
      );
      options.clock.advance(7 * 24 * 3600 * 1000);
      expect((await call(`${second.url}/projects?recoverable=true`, key)).body.projects).toEqual([]);
    } finally {
      await second.close();
    }
  });
});
