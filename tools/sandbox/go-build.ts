// Building Go tools from the module proxy into a cache outside the repo, keyed
// by version and a hash of the module's files, once even when parallel test
// workers ask at the same time. Used for the control plane, kubectl, helm and
// the one-node cluster's binaries (scripts/node/).
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, open, readFile, readdir, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { goCommand } from "./go-toolchain.ts";

export type Log = (line: string) => void;

export const stderrLog: Log = (line) => process.stderr.write(`${line}\n`);

/** ~/.cache/neon-cloud-operator (or $NEON_CONTROLPLANE_CACHE/neon-cloud-operator). */
export function cacheBase(): string {
  const base = process.env.NEON_CONTROLPLANE_CACHE ?? process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache");
  return join(base, "neon-cloud-operator");
}

/** The version a go.mod requires of `module`. */
export function requirement(goMod: string, module: string): string {
  const escaped = module.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const match = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, "m").exec(goMod);
  if (!match?.[1]) throw new Error(`go.mod requires no ${module}`);
  return match[1];
}

/** A short hash of the module's own files, so an edit (or a new go.sum) rebuilds. */
export async function moduleHash(moduleDir: string): Promise<string> {
  const hash = createHash("sha256");
  const files = (await readdir(moduleDir))
    .filter((f) => f.endsWith(".go") || f === "go.mod" || f === "go.sum")
    .sort();
  for (const f of files) {
    hash.update(f);
    hash.update(await readFile(join(moduleDir, f)));
  }
  return hash.digest("hex").slice(0, 12);
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? `exit ${code}`})`));
    });
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** One builder at a time per binary; a lock left by a process that died is taken over. */
async function buildOnce(binary: string, build: () => Promise<void>): Promise<void> {
  const lock = `${binary}.lock`;
  for (;;) {
    if (existsSync(binary)) return;
    try {
      const handle = await open(lock, "wx");
      await handle.writeFile(String(process.pid));
      await handle.close();
      try {
        if (!existsSync(binary)) await build();
        return;
      } finally {
        await rm(lock, { force: true });
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number(await readFile(lock, "utf8").catch(() => ""));
      if (holder > 0 && !isAlive(holder)) await rm(lock, { force: true });
      else await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export interface GoTool {
  /** Go package to build, e.g. "." or "k8s.io/kubernetes/cmd/kubectl". */
  pkg: string;
  /** The binary's path in the cache. */
  binary: string;
  ldflags: string[];
  /** Build tags, e.g. to leave out storage drivers that need cgo. */
  tags?: string[];
  /** What to tell a person while the first build runs. */
  describe: string;
}

/** Builds each tool that is not in the cache yet, from `moduleDir`. */
export async function buildGoTools(moduleDir: string, tools: GoTool[], log: Log = stderrLog): Promise<void> {
  // GOTOOLCHAIN=local: the go command never switches itself (goCommand picked one);
  // GOFLAGS=-mod=mod: go.sum pins everything.
  const env = { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod", CGO_ENABLED: "0" };
  let go: string | undefined;
  for (const tool of tools) {
    if (existsSync(tool.binary)) continue;
    await mkdir(join(tool.binary, ".."), { recursive: true });
    await buildOnce(tool.binary, async () => {
      log(`${tool.describe}; the first build takes a few minutes`);
      const started = Date.now();
      const tmp = `${tool.binary}.tmp-${process.pid}`;
      go ??= await goCommand(moduleDir, join(cacheBase(), "go"), log);
      await run(
        go,
        [
          "build",
          "-trimpath",
          ...(tool.tags ? [`-tags=${tool.tags.join(",")}`] : []),
          `-ldflags=${tool.ldflags.join(" ")}`,
          "-o",
          tmp,
          tool.pkg,
        ],
        moduleDir,
        env,
      );
      await rename(tmp, tool.binary);
      log(`built ${tool.binary} in ${Math.round((Date.now() - started) / 1000)} s`);
    });
  }
}
