// The optional state file, so a restarted emulator keeps its world. Written
// atomically (temporary file, then rename) and readable only by its owner: it
// holds the bootstrap key's value, which the emulator prints at start.
import { chmod, readFile, rename, writeFile } from "node:fs/promises";
import { z } from "zod";
import type { WorldState } from "./model.ts";

const stateFileSchema = z.object({
  version: z.literal(1),
  bootstrap_key: z.string(),
  world: z.custom<WorldState>((v) => typeof v === "object" && v !== null && "projects" in v),
});

export interface SavedState {
  bootstrapKey: string;
  world: WorldState;
}

export async function loadState(path: string): Promise<SavedState | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  const parsed = stateFileSchema.parse(JSON.parse(text));
  return { bootstrapKey: parsed.bootstrap_key, world: parsed.world };
}

export async function saveState(path: string, state: SavedState): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(
    tmp,
    JSON.stringify({ version: 1, bootstrap_key: state.bootstrapKey, world: state.world }),
    {
      mode: 0o600,
    },
  );
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}
