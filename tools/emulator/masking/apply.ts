// Static masking of a branch's data: for each table a rule names, every row's masked columns are
// computed in TypeScript (rules.ts) and written back in one transaction per database, as
// PostgreSQL Anonymizer's static masking rewrites the rows in place. A failure (a unique
// constraint a fake value breaks) rolls the database back and fails the run, as on the platform.
import type { PGlite, Transaction } from "@electric-sql/pglite";
import { databasesOf } from "../catalog.ts";
import type { BranchRecord, MaskingRule } from "../model.ts";
import type { ColumnInfo } from "../world.ts";
import { checkColumns, compileRules, evaluate, type CompiledRule } from "./rules.ts";

/** How the masking reaches a database of a branch (the store's `withDatabase`). */
export interface DatabaseAccess {
  withDatabase<T>(
    branchId: string,
    database: { name: string; ownerName: string },
    work: (db: PGlite) => Promise<T>,
  ): Promise<T>;
}

const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** The columns of the database's tables, with their types and whether a foreign key holds them. */
export async function readColumns(db: PGlite | Transaction): Promise<ColumnInfo[]> {
  const { rows } = await db.query<{
    schema: string;
    table: string;
    column: string;
    type: string;
    foreign_key: boolean;
  }>(`
    select n.nspname as schema, c.relname as table, a.attname as column,
           format_type(a.atttypid, a.atttypmod) as type,
           exists (select 1 from pg_constraint k
                   where k.contype = 'f' and k.conrelid = c.oid and a.attnum = any (k.conkey)) as foreign_key
    from pg_attribute a
    join pg_class c on c.oid = a.attrelid
    join pg_namespace n on n.oid = c.relnamespace
    where c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped
      and n.nspname not in ('pg_catalog', 'information_schema')
      and n.nspname not like 'pg_toast%' and n.nspname not like 'pg_temp%'`);
  return rows.map((r) => ({
    schema: r.schema,
    table: r.table,
    column: r.column,
    type: r.type,
    foreignKey: r.foreign_key,
  }));
}

/** Masks one table's columns in every row. */
async function maskTable(
  db: Transaction,
  rules: readonly CompiledRule[],
  columns: readonly ColumnInfo[],
  random: () => number,
): Promise<void> {
  const { schema_name: schema, table_name: table } = rules[0]!.rule;
  const target = `${quote(schema)}.${quote(table)}`;
  const all = columns.filter((c) => c.schema === schema && c.table === table);
  const { rows } = await db.query<Record<string, string | null>>(
    `select ctid::text as "__ctid", tableoid::int::text as "__table", ` +
      `${all.map((c) => `${quote(c.column)}::text as ${quote(c.column)}`).join(", ")} from ${target}`,
  );
  if (rows.length === 0) return;
  const values = rules.map(({ expression }) =>
    rows.map((row) => {
      const value = evaluate(expression, row, { random });
      return value === null ? null : String(value);
    }),
  );
  const types = rules.map(({ rule }) => all.find((c) => c.column === rule.column_name)!.type);
  const assignments = rules.map(({ rule }, i) => `${quote(rule.column_name)} = u.v${i}::${types[i]}`);
  const names = rules.map((_, i) => `v${i}`);
  const arrays = rules.map((_, i) => `$${i + 3}::text[]`);
  await db.query(
    `update ${target} as t set ${assignments.join(", ")} ` +
      `from unnest($1::text[], $2::text[], ${arrays.join(", ")}) as u(id, rel, ${names.join(", ")}) ` +
      `where t.ctid = u.id::tid and t.tableoid = u.rel::oid`,
    [rows.map((r) => r["__ctid"]), rows.map((r) => r["__table"]), ...values],
  );
}

/**
 * Applies the rules to the branch's data, database by database; answers how many columns were
 * masked. Throws the first failure, after which that database is as it was.
 */
export async function maskBranch(
  access: DatabaseAccess,
  branch: BranchRecord,
  rules: readonly MaskingRule[],
  random: () => number,
): Promise<number> {
  const compiled = compileRules(rules);
  const byDatabase = Map.groupBy(compiled, (c) => c.rule.database_name);
  for (const [name, databaseRules] of byDatabase) {
    const database = databasesOf(branch).find((d) => d.name === name);
    if (!database) throw new Error(`database ${name} does not exist on branch ${branch.id}`);
    await access.withDatabase(branch.id, database, (db) =>
      db.transaction(async (tx) => {
        const columns = await readColumns(tx);
        checkColumns(databaseRules, new Map([[name, columns]]));
        const byTable = Map.groupBy(databaseRules, (c) => `${c.rule.schema_name}\0${c.rule.table_name}`);
        for (const tableRules of byTable.values()) await maskTable(tx, tableRules, columns, random);
      }),
    );
  }
  return compiled.length;
}
