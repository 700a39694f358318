// Running the official CLI (neonctl) against an emulator, as a user runs it: its own process, a
// key of the user's, a config directory of its own, JSON output.
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve("neonctl/package.json")), "bin", "cli.js");

/** neonctl with these arguments and `apiKey`; JSON output parsed where it is JSON. */
export type Neonctl = (...args: string[]) => Promise<unknown>;

export function neonctlFor(apiUrl: string, apiKey: string, configDir: string): Neonctl {
  return async (...args) => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      cli,
      ...args,
      "--api-host",
      apiUrl,
      "--api-key",
      apiKey,
      "--no-analytics",
      "--config-dir",
      configDir,
      "--output",
      "json",
    ]);
    // A connection string is printed as it is, even with --output json.
    return stdout.startsWith("postgres") ? stdout.trim() : (JSON.parse(stdout) as unknown);
  };
}
