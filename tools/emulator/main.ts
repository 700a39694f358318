// Entry point of `npm run emulator` (node tools/emulator/main.ts [options]).
import { runEmulatorCommand } from "./cli.ts";

process.exitCode = await runEmulatorCommand(process.argv.slice(2));
