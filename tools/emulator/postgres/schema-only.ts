// A schema-only copy: the platform's `init_source: "schema-only"` gives a branch its parent's
// schema (tables, indexes, constraints, sequences) without a row of data, as a schema dump
// restored into an empty database would.
import type { PGlite } from "@electric-sql/pglite";

/** The user's schemas: everything but the system's own. */
const userRelations = `
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where n.nspname not in ('pg_catalog', 'information_schema')
    and n.nspname not like 'pg_toast%' and n.nspname not like 'pg_temp%'`;

/** Removes every row of the cluster's tables and restarts its sequences; the schema stays. */
export async function removeRows(db: PGlite): Promise<void> {
  const tables = await db.query<{ name: string }>(
    `select format('%I.%I', n.nspname, c.relname) as name ${userRelations} and c.relkind in ('r', 'p')`,
  );
  if (tables.rows.length > 0) {
    await db.exec(`truncate ${tables.rows.map((t) => t.name).join(", ")} restart identity cascade`);
  }
  // Sequences no column owns are not restarted by the truncate.
  const sequences = await db.query<{ name: string }>(
    `select format('%I.%I', n.nspname, c.relname) as name ${userRelations} and c.relkind = 'S'`,
  );
  for (const { name } of sequences.rows) await db.exec(`alter sequence ${name} restart`);
}
