// Entry point of `npm run dev` (node tools/sandbox/main.ts [options]): the local sandbox.
import { runSandboxCommand } from "./sandbox.ts";

process.exitCode = await runSandboxCommand(process.argv.slice(2));
