// The emulator command, run as people run it: a process that prints one JSON
// line, serves until interrupted, and refuses bad flags clearly.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import { describe, expect, it } from "vitest";

const main = join(import.meta.dirname, "main.ts");
const demoSeed = join(import.meta.dirname, "seeds", "demo.yaml");

describe("emulator command", () => {
  it("prints its URL and bootstrap key as one JSON line, serves the seed, and stops on Ctrl-C", async () => {
    const child = spawn(process.execPath, [main, "--port", "0", "--seed", demoSeed, "--no-rate-limits"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
      const printed = JSON.parse(line) as { url: string; admin_url: string; api_key: string };
      expect(printed.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v2$/);
      expect(printed.api_key).toMatch(/^[a-z0-9]{64}$/);
      const res = await fetch(`${printed.url}/projects`, {
        headers: { authorization: `Bearer ${printed.api_key}` },
      });
      const body = (await res.json()) as { projects: { id: string }[] };
      // Listed by id, the key of the project list's cursor.
      expect(body.projects.map((p) => p.id)).toEqual(["demo-analytics", "demo-shop"]);
      // The connection URI it names is served by a real Postgres.
      const uri = await fetch(
        `${printed.url}/projects/demo-shop/connection_uri?database_name=shop&role_name=app`,
        { headers: { authorization: `Bearer ${printed.api_key}` } },
      );
      const client = new pg.Client({ connectionString: ((await uri.json()) as { uri: string }).uri });
      await client.connect();
      expect((await client.query("select 6 * 7 as answer")).rows).toEqual([{ answer: 42 }]);
      await client.end();
      child.kill("SIGINT");
      const [code] = (await once(child, "exit")) as [number];
      expect(code).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });

  it.each([
    [["--port", "http"], /--port must be an integer/],
    [["--speed", "0"], /--speed must be a number/],
    [["--seed", "/nonexistent/seed.yaml"], /cannot use seed file/],
    [["--bogus"], /Unknown option '--bogus'/],
    [["--operation-duration-jitter", "2"], /--operation-duration-jitter must be at most 1/],
    [["--random-seed", "1.5"], /--random-seed must be an integer >= 0/],
    [["--missing-endpoint-delete", "410"], /--missing-endpoint-delete must be 204 or 404/],
    [["--postgres-idle-ms", "soon"], /--postgres-idle-ms must be an integer >= 0/],
    [["--no-postgres", "--postgres-host", "0.0.0.0"], /--no-postgres cannot be combined/],
  ])("refuses %j with a clear message and exit code 2", async (args, message) => {
    const child = spawn(process.execPath, [main, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number];
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toContain("Usage: npm run emulator");
  });
});
