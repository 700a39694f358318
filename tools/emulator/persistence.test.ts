// The state file: a restarted emulator keeps its world.
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Reply } from "../../test/emulator/harness.ts";
import { createManualClock } from "./clock.ts";
import { startEmulator } from "./emulator.ts";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

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
    const dir = await mkdtemp(join(tmpdir(), "emulator-state-"));
    dirs.push(dir);
    const stateFile = join(dir, "world.json");
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
    const dir = await mkdtemp(join(tmpdir(), "emulator-state-"));
    dirs.push(dir);
    const clock = createManualClock();
    const options = {
      clock,
      stateFile: join(dir, "world.json"),
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
});
