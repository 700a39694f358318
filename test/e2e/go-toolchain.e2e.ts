// A machine without Go: the builder fetches the release go.mod names as the
// module golang.org/toolchain, checks it against sum.golang.org and builds with it.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, test } from "vitest";
import { buildGoTools } from "../../tools/sandbox/go-build.ts";

const execFileAsync = promisify(execFile);
const moduleDir = join(dirname(fileURLToPath(import.meta.url)), "hello");

let cache: string;
const saved = { ...process.env };

beforeAll(async () => {
  cache = await mkdtemp(join(tmpdir(), "neon-go-toolchain-"));
  // PATH without any go; a cache of our own so nothing from earlier runs helps.
  process.env.PATH = "/usr/sbin:/usr/bin:/sbin:/bin";
  process.env.NEON_CONTROLPLANE_CACHE = cache;
  process.env.GOPATH = join(cache, "gopath");
  process.env.GOCACHE = join(cache, "gocache");
});

afterAll(async () => {
  process.env = saved;
  await rm(cache, { recursive: true, force: true });
});

test("without go on PATH the builder fetches go1.26.0 and builds with it", async () => {
  await expect(execFileAsync("go", ["version"])).rejects.toThrow(/ENOENT/);
  const binary = join(cache, "hello");
  const lines: string[] = [];
  await buildGoTools(moduleDir, [{ pkg: ".", binary, ldflags: [], describe: "hello" }], (l) => lines.push(l));

  expect(lines.join("\n")).toMatch(/fetching golang\.org\/toolchain@v0\.0\.1-go1\.26\.0\.linux-amd64/);
  expect(existsSync(join(cache, "neon-cloud-operator", "go", "go1.26.0.linux-amd64", "bin", "go"))).toBe(
    true,
  );
  const { stdout } = await execFileAsync(binary);
  expect(stdout.trim()).toBe("hello from go1.26.0");
});
