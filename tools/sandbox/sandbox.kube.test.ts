// `npm run dev` stops as a user, a script or a service manager expects: the sandbox is started as
// users start it (npm, in the repository), then SIGINT (`kill -INT`, what Ctrl-C sends), SIGTERM
// (`timeout`, systemd, an IDE) or SIGKILL (nothing forwarded) goes to that npm process only, not
// to its process group. Each time everything it started is gone afterwards (the sandbox's node
// process, which holds the emulator and the operator, and the control plane), and the run's logs
// are kept. Heavy: each run builds (cached) and starts a control plane of its own.
import { spawn, type ChildProcess } from "node:child_process";
import { readFile, readdir, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const repoRoot = resolve(import.meta.dirname, "..", "..");
const startTimeoutMs = 300_000;

interface Proc {
  pid: number;
  ppid: number;
  /** Clock ticks since boot when it started: tells a process from a later one with its pid. */
  start: string;
  command: string;
}

/** Every process on the machine, from /proc. */
async function processes(): Promise<Proc[]> {
  const out: Proc[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const statLine = await readFile(`/proc/${entry}/stat`, "utf8");
      // The command name is in parentheses and may hold spaces; the fields after it are plain.
      const fields = statLine.slice(statLine.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z") continue; // exited, not reaped yet
      const command = (await readFile(`/proc/${entry}/cmdline`, "utf8")).split("\0").join(" ").trim();
      out.push({ pid: Number(entry), ppid: Number(fields[1]), start: fields[19] ?? "", command });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The processes below `root` (its children, theirs, ...). */
async function descendants(root: number): Promise<Proc[]> {
  const all = await processes();
  const found: Proc[] = [];
  const parents = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all)
      if (parents.has(p.ppid) && !parents.has(p.pid)) {
        parents.add(p.pid);
        found.push(p);
        grew = true;
      }
  }
  return found;
}

async function alive(procs: Proc[]): Promise<Proc[]> {
  const now = await processes();
  return procs.filter((p) => now.some((q) => q.pid === p.pid && q.start === p.start));
}

async function until<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Dev {
  npm: ChildProcess;
  output: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let started: Dev | undefined;

/** `npm run dev` in the repository, in a process group of its own (as a terminal would start it). */
function startDev(): Dev {
  const npm = spawn("npm", ["run", "dev"], {
    cwd: repoRoot,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, FORCE_COLOR: "0" },
  });
  let text = "";
  npm.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
  npm.stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    npm.once("exit", (code, signal) => res({ code, signal })),
  );
  started = { npm, output: () => text, exit };
  return started;
}

afterEach(() => {
  // Whatever a failed test left: the process group this file started, and only that.
  const pid = started?.npm.pid;
  started = undefined;
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // the group is gone: nothing left
  }
});

/** Starts the sandbox, sends `signal` to npm alone, and checks what is left. */
async function stopWith(signal: NodeJS.Signals): Promise<void> {
  const dev = startDev();
  const npmPid = dev.npm.pid;
  if (npmPid === undefined) throw new Error("npm did not start");
  await until(
    "the sandbox to be ready",
    () => (dev.output().includes("Sandbox ready") ? true : undefined),
    startTimeoutMs,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; output so far:\n${dev.output()}`);
  });
  const below = await descendants(npmPid);
  const sandbox = below.find((p) => p.command.includes("tools/sandbox/main.ts"));
  const controlPlane = below.find((p) => p.command.includes("controlplane serve"));
  expect(sandbox, `the sandbox's node process, among ${JSON.stringify(below)}`).toBeDefined();
  expect(controlPlane, "the control plane process").toBeDefined();
  // npm starts node in place of the shell (exec), so npm's forwarding reaches it.
  expect(sandbox?.ppid).toBe(npmPid);

  process.kill(npmPid, signal);
  const exit = await dev.exit;
  if (signal !== "SIGKILL") expect(exit, dev.output()).toEqual({ code: 0, signal: null });
  const left = await until(
    "every process of the sandbox to end",
    async () => ((await alive(below)).length === 0 ? [] : undefined),
    60_000,
  ).catch(async () => alive(below));
  expect(left, dev.output()).toEqual([]);
  expect(dev.output()).toContain("sandbox: stopped; the logs are kept in");

  // The run's logs stay where it said.
  const dir = /logs of this run in (\S+)\//.exec(dev.output())?.[1];
  expect(dir, dev.output()).toBeDefined();
  for (const file of ["operator.log", "controlplane.log"]) {
    const size = (await stat(resolve(repoRoot, dir ?? "", file))).size;
    expect(size, `${dir}/${file} is kept and not empty`).toBeGreaterThan(0);
  }
}

describe("npm run dev stops cleanly, leaving no process behind", () => {
  it("on SIGINT to the npm process (kill -INT, not the whole group)", () => stopWith("SIGINT"), 600_000);
  it("on SIGTERM to the npm process (timeout, systemd, an IDE)", () => stopWith("SIGTERM"), 600_000);
  it(
    "when the npm process is killed outright (SIGKILL): the sandbox sees its parent gone",
    () => stopWith("SIGKILL"),
    600_000,
  );
});
