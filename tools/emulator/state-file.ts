// The optional state file, so a restarted emulator keeps its world. Written
// atomically (temporary file, then rename) and readable only by its owner: it
// holds the bootstrap keys' values, which the emulator prints at start.
import { chmod, readFile, rename, writeFile } from "node:fs/promises";
import { z } from "zod";
import type { AccountRecord, WorldState } from "./model.ts";

const stateFileSchema = z.object({
  version: z.literal(1),
  bootstrap_key: z.string(),
  /** By account id; absent in files written before there were several accounts. */
  bootstrap_keys: z.record(z.string(), z.string()).optional(),
  world: z.custom<WorldState>((v) => typeof v === "object" && v !== null && "projects" in v),
});

export interface SavedState {
  /** Every account's bootstrap key value, by account id, first account first. */
  bootstrapKeys: Map<string, string>;
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
  const world = fromSingleAccount(parsed.world);
  const first = world.accounts[0]?.id ?? "";
  return {
    bootstrapKeys: new Map(Object.entries(parsed.bootstrap_keys ?? { [first]: parsed.bootstrap_key })),
    world,
  };
}

/** A world saved with one `user` and no accounts: that user owns every key and project. */
function fromSingleAccount(world: WorldState): WorldState {
  const legacy = world as WorldState & { user?: { id: string; name: string; image: string } };
  if (world.accounts !== undefined || legacy.user === undefined) return world;
  const { user, ...rest } = legacy;
  const account: AccountRecord = { ...user, kind: "user", email: "user@example.com", createdAt: 0 };
  return {
    ...rest,
    accounts: [account],
    apiKeys: rest.apiKeys.map((k) => ({ ...k, accountId: k.accountId ?? user.id })),
    projects: rest.projects.map((p) => ({ ...p, ownerId: p.ownerId ?? user.id })),
  };
}

export async function saveState(path: string, state: SavedState): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  const [first = ""] = state.bootstrapKeys.values();
  await writeFile(
    tmp,
    JSON.stringify({
      version: 1,
      bootstrap_key: first,
      bootstrap_keys: Object.fromEntries(state.bootstrapKeys),
      world: state.world,
    }),
    { mode: 0o600 },
  );
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}
