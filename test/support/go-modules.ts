// The tests' Go tools (the modules under test/tools/) and the Go modules they read, taken
// from the module proxy: a program built once into the cache, or a module downloaded once
// into the Go module cache and checked against the hash pinned beside its version.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  buildGoTools,
  cacheBase,
  moduleHash,
  requirement,
  type GoTool,
  type Log,
} from "../../tools/sandbox/go-build.ts";
import { goCommand } from "../../tools/sandbox/go-toolchain.ts";

const exec = promisify(execFile);

/** Where a tool's build lands, and what its go.mod says. */
export interface ToolCache {
  goMod: string;
  /** The versions go.mod requires of the modules named `pinned`, in that order, joined by "-". */
  versions: string;
  dir: string;
}

/**
 * Builds (or finds in the cache) the program `name` from `moduleDir` and returns its path:
 * <cache>/tools/<name>-<versions>-<hash>/<name>, so a version bump or an edit of the module rebuilds.
 */
export async function buildModuleTool(
  moduleDir: string,
  name: string,
  pinned: readonly string[],
  tool: (cache: ToolCache) => Omit<GoTool, "binary">,
  log: Log,
): Promise<string> {
  const goMod = await readFile(join(moduleDir, "go.mod"), "utf8");
  const versions = pinned.map((m) => requirement(goMod, m)).join("-");
  const dir = join(cacheBase(), "tools", `${name}-${versions}-${await moduleHash(moduleDir)}`);
  const binary = join(dir, name);
  await buildGoTools(moduleDir, [{ ...tool({ goMod, versions, dir }), binary }], log);
  return binary;
}

/**
 * The directory of `module@version` in the Go module cache, downloaded once; `go mod download`
 * checks it against the Go checksum database, and here against `sum` (go.sum's `h1:` form).
 * `toolchainModuleDir`'s go.mod names the Go release to run.
 */
export async function downloadModule(
  module: string,
  version: string,
  sum: string,
  toolchainModuleDir: string,
  log: Log,
): Promise<string> {
  const go = await goCommand(toolchainModuleDir, join(cacheBase(), "go"), log);
  const { stdout } = await exec(go, ["mod", "download", "-json", `${module}@${version}`], {
    cwd: tmpdir(), // outside any module: nothing here is changed
    env: { ...process.env, GOTOOLCHAIN: "local", GO111MODULE: "on", GOFLAGS: "" },
    maxBuffer: 1024 * 1024,
  }).catch((err: unknown) => {
    const out = (err as { stdout?: string }).stdout ?? "";
    throw new Error(`go mod download ${module}@${version} failed: ${out || String(err)}`, { cause: err });
  });
  const info = JSON.parse(stdout) as { Dir?: string; Sum?: string; Error?: string };
  if (info.Error !== undefined || info.Dir === undefined) {
    throw new Error(`go mod download ${module}@${version}: ${info.Error ?? "no directory"}`);
  }
  if (info.Sum !== sum) {
    throw new Error(`${module}@${version} has hash ${info.Sum ?? "none"}, not the pinned ${sum}`);
  }
  return info.Dir;
}
