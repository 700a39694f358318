// What the bench commands share: the flags every one of them takes, reading numbers from flags,
// and running in the lab (a work directory, the control plane, the operator build; stopped on a
// signal, a failure kept for reading, a success cleaned up).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, startLab, type Lab } from "./lab.ts";
import { killOperatorProcesses } from "./operator-process.ts";

/** Options of every bench command, for `parseArgs`. */
export const sharedOptions = {
  "operation-ms": { type: "string", default: "2000" },
  jitter: { type: "string", default: "0.25" },
  seed: { type: "string", default: "2026" },
  out: { type: "string", default: join(repoRoot, "docs", "performance.md") },
  "no-write": { type: "boolean", default: false },
  keep: { type: "boolean", default: false },
  trace: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;

/** The usage lines of `sharedOptions` (after a command's own). */
export const sharedUsage = `  --operation-ms N   mean duration of a platform operation (default 2000)
  --jitter F         each operation lasts operation-ms × (1 ± F) (default 0.25)
  --seed N           seed of the emulator's draws (default 2026)
  --out PATH         the page whose section is written (default docs/performance.md)
  --no-write         print only
  --keep             keep the work directory (operator log)
  --trace            write every platform request (time, route, path, status) to trace.tsv in the
                     work directory, and keep it
`;

/** The command as it was run, with its options, as a page's first line names it: `npm run bench:x -- …`. */
export function asRun(script: string): string {
  const argv = process.argv.slice(2).join(" ");
  return `npm run ${script}${argv ? ` -- ${argv}` : ""}`;
}

/** The emulator's draws as the shared flags set them (a bad value refused with the usage). */
export function drawFlags(
  command: string,
  usage: string,
  values: { "operation-ms": string; jitter: string; seed: string },
): { operationMs: number; jitter: number; randomSeed: number } {
  const { positive, jitter } = flagReader(command, usage);
  return {
    operationMs: positive(values["operation-ms"], 2000, "operation-ms"),
    jitter: jitter(values.jitter),
    randomSeed: positive(values.seed, 2026, "seed"),
  };
}

/** Readers of flag values that refuse a bad one with the command's usage (exit 2). */
export function flagReader(command: string, usage: string) {
  const refuse = (message: string): never => {
    process.stderr.write(`${command}: ${message}\n\n${usage}`);
    process.exit(2);
  };
  const positive = (text: string | undefined, fallback: number, name: string): number => {
    const n = text === undefined ? fallback : Number(text);
    if (!Number.isFinite(n) || n <= 0) refuse(`--${name} must be a positive number`);
    return n;
  };
  const jitter = (text: string): number => {
    const n = Number(text);
    if (!(n >= 0 && n < 1)) refuse("--jitter must be at least 0 and below 1");
    return n;
  };
  return { refuse, positive, jitter };
}

export const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

/**
 * Runs `body` in a fresh lab and exits: 0 when it succeeded (the work directory removed unless
 * `keep`), 1 when it threw (the directory kept, with the operator's and control plane's logs),
 * 130 on SIGINT or SIGTERM (operator processes killed).
 */
export async function runInLab(
  command: string,
  options: { prefix: string; keep: boolean; intro: (workDir: string) => string },
  body: (lab: Lab, workDir: string) => Promise<void>,
): Promise<never> {
  const workDir = await mkdtemp(join(tmpdir(), options.prefix));
  say(options.intro(workDir));
  const lab = await startLab(workDir);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      say(`${command}: ${signal}, stopping; logs kept in ${workDir}`);
      killOperatorProcesses();
      void lab.stop().finally(() => process.exit(130));
    });
  }
  let failed = false;
  try {
    await body(lab, workDir);
  } catch (err) {
    failed = true;
    process.stderr.write(
      `${command} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.stderr.write(`${command}: logs kept in ${workDir}\n`);
  } finally {
    await lab.stop();
    if (!failed && !options.keep) await rm(workDir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}
