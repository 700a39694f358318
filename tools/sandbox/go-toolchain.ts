// Finding a Go toolchain for the builds of go-build.ts: the `go` on PATH when
// it is at least the version go.mod asks for; otherwise that release, fetched
// once as the Go module `golang.org/toolchain` (what GOTOOLCHAIN does) from the
// module proxy into the cache and checked against the checksum database. So a
// machine without Go can still run `npm run dev` and `npm test`.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, writeSync } from "node:fs";
import { chmod, readdir, readFile, rename, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { Unzip, UnzipInflate } from "fflate";
import type { Log } from "./go-build.ts";

const execFileAsync = promisify(execFile);

/** "1.26.0" -> [1, 26, 0]; "go1.26rc1" style suffixes are ignored. */
export function parseGoVersion(text: string): number[] | undefined {
  const match = /(?:^|go)(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

export function atLeast(have: number[], want: number[]): boolean {
  for (let i = 0; i < 3; i++) {
    const a = have[i] ?? 0;
    const b = want[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

/** The release go.mod needs: its `toolchain` line, else its `go` line (as GOTOOLCHAIN=auto reads them). */
export function wantedRelease(goMod: string): string {
  const toolchain = /^toolchain\s+go(\S+)/m.exec(goMod)?.[1];
  const go = /^go\s+(\S+)/m.exec(goMod)?.[1];
  const release = toolchain ?? go;
  if (!release) throw new Error("go.mod has no go line");
  // "go 1.26" means the release 1.26.0 since Go 1.21.
  return /^\d+\.\d+$/.test(release) ? `${release}.0` : release;
}

async function localGoVersion(): Promise<number[] | undefined> {
  try {
    const { stdout } = await execFileAsync("go", ["env", "GOVERSION"], {
      env: { ...process.env, GOTOOLCHAIN: "local" },
    });
    return parseGoVersion(stdout.trim());
  } catch {
    return undefined; // no go on PATH
  }
}

function goPlatform(): string {
  const arch = { x64: "amd64", arm64: "arm64" }[process.arch as string];
  if (!arch || (process.platform !== "linux" && process.platform !== "darwin")) {
    throw new Error(`no Go toolchain download for ${process.platform}/${process.arch}; install Go yourself`);
  }
  return `${process.platform}-${arch}`;
}

function proxyBase(): string {
  const first = (process.env.GOPROXY ?? "https://proxy.golang.org").split(/[,|]/)[0] ?? "";
  return first.startsWith("http") ? first.replace(/\/$/, "") : "https://proxy.golang.org";
}

async function fetchOk(url: string): Promise<Response> {
  const response = await fetch(url);
  if (!response.ok || !response.body) throw new Error(`GET ${url}: HTTP ${response.status}`);
  return response;
}

/**
 * The `h1:` hash the checksum database records for a module version, asked
 * through the proxy as the go command does (sum.golang.org itself may be out of reach).
 */
async function recordedHash(module: string, version: string): Promise<string> {
  const text = await (
    await fetchOk(`${proxyBase()}/sumdb/sum.golang.org/lookup/${module}@${version}`)
  ).text();
  const line = text.split("\n").find((l) => l.startsWith(`${module} ${version} h1:`));
  if (!line) throw new Error(`sum.golang.org has no hash for ${module}@${version}`);
  return line.split(" ")[2] ?? "";
}

/**
 * Streams the module zip into `dest`, computing the module's `h1:` hash (the
 * sha256 of the sorted "sha256  name" lines of its files) on the way.
 */
async function downloadAndUnzip(url: string, prefix: string, dest: string): Promise<string> {
  const files: { name: string; sum: string }[] = [];
  let failure: Error | undefined;
  const unzip = new Unzip((file) => {
    if (!file.name.startsWith(prefix)) {
      failure = new Error(`unexpected path ${file.name} in ${url}`);
      return;
    }
    const rel = file.name.slice(prefix.length);
    const hash = createHash("sha256");
    let fd: number | undefined;
    if (!file.name.endsWith("/")) {
      mkdirSync(join(dest, dirname(rel)), { recursive: true });
      fd = openSync(join(dest, rel), "w");
    }
    file.ondata = (err, chunk, final) => {
      if (err) {
        failure = err;
        return;
      }
      hash.update(chunk);
      if (fd !== undefined) writeSync(fd, chunk);
      if (final) {
        if (fd !== undefined) closeSync(fd);
        files.push({ name: file.name, sum: hash.digest("hex") });
      }
    };
    file.start();
  });
  unzip.register(UnzipInflate);
  const response = await fetchOk(url);
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    unzip.push(chunk);
    if (failure) throw failure;
  }
  unzip.push(new Uint8Array(0), true);
  if (failure) throw failure;
  const summary = files
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((f) => `${f.sum}  ${f.name}\n`)
    .join("");
  return `h1:${createHash("sha256").update(summary).digest("base64")}`;
}

/** Fetches go<release> into the cache (once) and returns its `go` binary. */
async function fetchToolchain(release: string, cacheDir: string, log: Log): Promise<string> {
  const module = "golang.org/toolchain";
  const version = `v0.0.1-go${release}.${goPlatform()}`;
  const root = join(cacheDir, `go${release}.${goPlatform()}`);
  const go = join(root, "bin", "go");
  if (existsSync(go)) return go;
  log(`go: no Go ${release} or newer on PATH; fetching ${module}@${version} from the module proxy`);
  const tmp = `${root}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  try {
    const [expected, actual] = await Promise.all([
      recordedHash(module, version),
      downloadAndUnzip(`${proxyBase()}/${module}/@v/${version}.zip`, `${module}@${version}/`, tmp),
    ]);
    if (expected !== actual) {
      throw new Error(`${module}@${version}: checksum ${actual} does not match sum.golang.org's ${expected}`);
    }
    // Zips keep no file modes; the go command marks the same files executable when it switches toolchains.
    for (const dir of ["bin", join("pkg", "tool", goPlatform().replace("-", "_"))]) {
      for (const name of await readdir(join(tmp, dir)).catch(() => [] as string[])) {
        await chmod(join(tmp, dir, name), 0o755);
      }
    }
    // Another process may have finished the same fetch meanwhile; keep its copy.
    if (!existsSync(go)) await rename(tmp, root);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  log(`go: Go ${release} is in ${root}`);
  return go;
}

/**
 * The `go` command to build `moduleDir` with: the one on PATH if new enough,
 * else the release go.mod names, fetched into `cacheDir`.
 */
export async function goCommand(moduleDir: string, cacheDir: string, log: Log): Promise<string> {
  const release = wantedRelease(await readFile(join(moduleDir, "go.mod"), "utf8"));
  const want = parseGoVersion(release);
  const have = await localGoVersion();
  if (have && want && atLeast(have, want)) return "go";
  return fetchToolchain(release, cacheDir, log);
}
