// The container image's steps, run outside Docker (no Docker engine here):
// build dist/, install production dependencies only, start the entrypoint as
// the image does, and see it answer /healthz and stop cleanly on SIGTERM.
import { execFile, spawn } from "node:child_process";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, inject, it } from "vitest";
import { imageNodeFlags } from "../../scripts/bench/operator-build.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { eventually } from "../support/kube.ts";

const exec = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, "..", "..");
let app: string | undefined;
let emulator: Emulator | undefined;

afterAll(async () => {
  await emulator?.close();
  if (app) await rm(app, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

describe("the container image's steps", () => {
  it("builds, installs production dependencies only, starts, answers /healthz and stops on SIGTERM", async () => {
    app = await mkdtemp(join(tmpdir(), "neon-image-"));
    // Build stage: npm run build (the repo's own compiler, into the image's /app/dist).
    await exec(process.execPath, [
      join(repoRoot, "node_modules", "typescript", "bin", "tsc"),
      "-p",
      join(repoRoot, "tsconfig.build.json"),
      "--outDir",
      join(app, "dist"),
    ]);
    // Runtime stage: package files, production dependencies only, dist/ and crds/.
    await cp(join(repoRoot, "package.json"), join(app, "package.json"));
    await cp(join(repoRoot, "package-lock.json"), join(app, "package-lock.json"));
    await cp(join(repoRoot, "crds"), join(app, "crds"), { recursive: true });
    await exec("npm", ["ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"], {
      cwd: app,
      timeout: 300_000,
    });
    const installed = JSON.parse(
      (await exec("npm", ["ls", "--omit=dev", "--depth=0", "--json"], { cwd: app })).stdout,
    ) as { dependencies?: Record<string, unknown> };
    expect(Object.keys(installed.dependencies ?? {})).toContain("@kubernetes/client-node");
    expect(Object.keys(installed.dependencies ?? {})).not.toContain("vitest");

    // Start: the entrypoint (with its Node flags) and its configuration from the environment, as in deploy/.
    const nodeFlags = imageNodeFlags(await readFile(join(repoRoot, "Dockerfile"), "utf8"));
    emulator = await startEmulator({ rateLimits: false });
    const port = await freePort();
    const child = spawn(process.execPath, [...nodeFlags, "dist/cli.js", "run"], {
      cwd: app,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: "production",
        KUBECONFIG: inject("kubeconfig"),
        NEON_OPERATOR_PLATFORM_BASE_URL: emulator.url,
        NEON_OPERATOR_LEADER_ELECTION: "false",
        NEON_OPERATOR_METRICS_ADDRESS: `127.0.0.1:${port}`,
        NEON_OPERATOR_NAMESPACES: "image-test-none",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (b: Buffer) => (output += b.toString()));
    child.stderr.on("data", (b: Buffer) => (output += b.toString()));
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    try {
      const health = await eventually(
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
          return res?.status === 200 ? res.status : undefined;
        },
        { what: `/healthz (operator output: ${output.slice(-500)})`, timeoutMs: 30_000, intervalMs: 200 },
      );
      expect(health).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toContain("neon_");
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(output).toContain("operator started");
  });
});
