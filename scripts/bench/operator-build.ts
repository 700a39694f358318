// The operator as its container image runs it, so the bench's memory figures are
// the image's: JavaScript compiled from this tree (what `npm run build` puts in
// the image; Node's type stripping of the .ts sources costs memory of its own),
// started with the Node flags of the Dockerfile's ENTRYPOINT (V8's heap sizing
// otherwise follows the machine's memory, and this machine is no container).
import { execFile } from "node:child_process";
import { copyFile, mkdir, readFile, symlink } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, "..", "..");

export interface OperatorBuild {
  /** The compiled entry point (`dist/cli.js`). */
  cli: string;
  /** Node flags placed before it, as in the image. */
  nodeFlags: string[];
}

/** The flags between `node` and `dist/cli.js` in the Dockerfile's exec-form ENTRYPOINT. */
export function imageNodeFlags(dockerfile: string): string[] {
  const line = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1];
  const argv = line === undefined ? undefined : (JSON.parse(line) as unknown);
  const cli = Array.isArray(argv) ? argv.indexOf("dist/cli.js") : -1;
  if (!Array.isArray(argv) || argv[0] !== "node" || cli < 0) {
    throw new Error('the Dockerfile has no ENTRYPOINT ["node", ...flags, "dist/cli.js"]');
  }
  return argv.slice(1, cli) as string[];
}

/** Compiles the operator into `<workDir>/operator/dist` beside this checkout's node_modules. */
export async function buildOperator(workDir: string): Promise<OperatorBuild> {
  const app = join(workDir, "operator");
  await mkdir(app, { recursive: true });
  await exec(process.execPath, [
    join(repoRoot, "node_modules", "typescript", "bin", "tsc"),
    "-p",
    join(repoRoot, "tsconfig.build.json"),
    "--outDir",
    join(app, "dist"),
  ]);
  // package.json makes dist/ ES modules, as in the image; the dependencies are this checkout's.
  await copyFile(join(repoRoot, "package.json"), join(app, "package.json"));
  await symlink(join(repoRoot, "node_modules"), join(app, "node_modules"), "dir");
  return {
    cli: join(app, "dist", "cli.js"),
    nodeFlags: imageNodeFlags(await readFile(join(repoRoot, "Dockerfile"), "utf8")),
  };
}
