// What the store learns from a cluster while clients use it: where its WAL is after each change.
// pglite-socket runs each client message in `runExclusive`; the cluster it is given is this
// wrapper, which looks at the WAL position once a message that ends a transaction's work (a
// simple Query or a Sync) has run outside a transaction block, so every committed change is seen
// at the emulated time it was made.
import type { PGlite } from "@electric-sql/pglite";
import { parseLsn } from "./lsn.ts";

const query = "Q".charCodeAt(0);
const sync = "S".charCodeAt(0);

/** The cluster's current WAL insert position. */
export async function walPosition(db: PGlite): Promise<number> {
  const { rows } = await db.query<{ lsn: string }>("select pg_current_wal_insert_lsn()::text as lsn");
  const position = parseLsn(rows[0]?.lsn ?? "");
  if (position === undefined) throw new Error("postgres answered no WAL position");
  return position;
}

/**
 * `db` as pglite-socket sees it, calling `settled` after each message that may have committed a
 * change (outside a transaction block). The next message waits for it.
 */
export function observed(db: PGlite, settled: () => Promise<void>): PGlite {
  let kind = 0;
  return new Proxy(db, {
    get(target, property) {
      if (property === "execProtocolRawStream") {
        return (message: Uint8Array, options: Parameters<PGlite["execProtocolRawStream"]>[1]) => {
          kind = message[0] ?? 0;
          return target.execProtocolRawStream(message, options);
        };
      }
      if (property === "runExclusive") {
        return async <T>(work: () => Promise<T>): Promise<T> => {
          const result = await target.runExclusive(work);
          if ((kind === query || kind === sync) && !target.isInTransaction()) await settled();
          return result;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
