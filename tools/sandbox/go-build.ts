// Building Go tools from the module proxy into a cache outside the repo, keyed
// by version and a hash of the module's files, once even when parallel test
// workers ask at the same time. Used for the control plane, kubectl, helm and
// the one-node cluster's binaries (scripts/node/).
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, open, readFile, readdir, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, join } from "node:path";
import { createInterface } from "node:readline";
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

/** Runs `cmd`, handing each line it prints (stdout and stderr) to `onLine`; rejects on a non-zero exit. */
function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  onLine: (line: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream }).on("line", onLine);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? `exit ${code}`})`));
    });
  });
}

/**
 * What a person is told while Go builds: the phases (modules downloaded, packages compiled) with
 * a count and a share done, a line per tenth at most, instead of the go command's line per module
 * and per package. Anything else the go command says (a compile error) is kept for the failure.
 */
export class BuildProgress {
  private readonly log: Log;
  private readonly name: string;
  private downloads = 0;
  private compiled = 0;
  private total = 0;
  private shownTenth = 0;
  private lastDownloadNote = 0;
  private phaseStarted = Date.now();
  /** Lines that were neither a download nor a package: errors and warnings. */
  readonly other: string[] = [];

  constructor(name: string, log: Log) {
    this.name = name;
    this.log = log;
  }

  /** A line of `go list -deps` (a package, on stdout) or of the downloads it makes (stderr). */
  listing(line: string): void {
    if (line.startsWith("go: downloading ")) {
      if (this.downloads === 0) this.log(`${this.name}: downloading Go modules from the module proxy...`);
      this.downloads++;
      if (Date.now() - this.lastDownloadNote >= 15_000) {
        this.lastDownloadNote = Date.now();
        if (this.downloads > 1) this.log(`${this.name}: downloading Go modules: ${this.downloads} so far`);
      }
    } else if (/^[\w.~/-]+$/.test(line)) this.total++;
    else this.other.push(line);
  }

  /** The listing is done: the modules are here and the packages counted. */
  compiling(expect: string): void {
    if (this.downloads > 0) {
      this.log(`${this.name}: downloaded ${this.downloads} Go modules in ${this.seconds()} s`);
    }
    this.phaseStarted = Date.now();
    this.log(`${this.name}: compiling ${this.total} Go packages (${expect})...`);
  }

  /** A line of `go build -v`: a package it compiled, or something else. */
  built(line: string): void {
    if (!/^[\w.~/-]+$/.test(line)) {
      this.other.push(line);
      return;
    }
    this.compiled++;
    // Cached packages are not printed, so a warm build may never reach 100%.
    const tenth = this.total > 0 ? Math.floor((this.compiled * 10) / this.total) : 0;
    if (tenth > this.shownTenth && tenth < 10) {
      this.shownTenth = tenth;
      this.log(
        `${this.name}: compiling: ${tenth * 10}% (${this.compiled} of ${this.total} packages, ${this.seconds()} s)`,
      );
    }
  }

  private seconds(): number {
    return Math.round((Date.now() - this.phaseStarted) / 1000);
  }
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
  /** How long compiling takes the first time, as a person is told (e.g. "about 7 minutes on 2 cores"). */
  expect?: string;
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
      log(tool.describe);
      const started = Date.now();
      const tmp = `${tool.binary}.tmp-${process.pid}`;
      go ??= await goCommand(moduleDir, join(cacheBase(), "go"), log);
      const name = basename(tool.binary);
      const progress = new BuildProgress(name, log);
      const tags = tool.tags ? [`-tags=${tool.tags.join(",")}`] : [];
      try {
        // Listing the packages first downloads the modules they need, and counts what to compile.
        await run(go, ["list", "-deps", ...tags, tool.pkg], moduleDir, env, (line) => progress.listing(line));
        progress.compiling(tool.expect ?? "a few minutes the first time");
        await run(
          go,
          ["build", "-v", "-trimpath", ...tags, `-ldflags=${tool.ldflags.join(" ")}`, "-o", tmp, tool.pkg],
          moduleDir,
          env,
          (line) => progress.built(line),
        );
      } catch (err) {
        // The go command's own words (a compile error, a module it could not fetch), not its progress.
        throw new Error(`${(err as Error).message}\n${progress.other.slice(-40).join("\n")}`, { cause: err });
      }
      await rename(tmp, tool.binary);
      log(`${name}: built in ${Math.round((Date.now() - started) / 1000)} s (${tool.binary})`);
    });
  }
}
