// A seed's SQL: the rows a seeded project's primary branch starts with (a demo's production data,
// which a masked preview branch then masks), run in its database as its owner: once the world is
// seeded, before the emulator answers, and again as soon as an admin reset has cleared the data.
// A world restored from a state file keeps the data it had instead.
import type { DatabaseStore } from "./postgres/store.ts";
import type { Seed } from "./seed.ts";
import type { World } from "./world.ts";

export async function loadSeedData(world: World, seed: Seed, store: DatabaseStore): Promise<void> {
  for (const account of [seed, ...seed.accounts])
    for (const project of account.projects) {
      const sql = project.sql;
      if (sql === undefined) continue;
      // A seed without an id gets a generated one: found by its name then.
      const projectId = project.id ?? [...world.projects.values()].find((p) => p.name === project.name)?.id;
      const primary = [...world.branches.values()].find((b) => b.projectId === projectId && b.primary);
      if (primary === undefined) continue;
      const database = { name: project.database_name, ownerName: project.role_name };
      await store.withDatabase(primary.id, database, async (db) => {
        // As the owner role, so what it creates is the owner's (the app's role reads it).
        await db.exec(`set role ${quoteIdent(project.role_name)}; ${sql}; reset role;`);
      });
    }
}

const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;
