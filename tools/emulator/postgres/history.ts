// The history of one database of a branch, as far back as the project's history retention
// reaches: the runs of its cluster (each from a dump to its stop) and, within each, the WAL
// position after every change with the emulated time it was made. A point in time is then a WAL
// position, and wal.ts makes a copy of the database as it was there.

/** The WAL position after a change, and when the change was made (emulated ms). */
export interface Mark {
  at: number;
  wal: number;
}

/** One run of a database's cluster: started from a dump, changed by its clients until it stops. */
export interface Run {
  /** The dump the run started from. Its files hold nothing newer than any point of the run. */
  from: string;
  startedAt: number;
  marks: Mark[];
}

/** Where the data of a point is. */
export type PointSource =
  /** Nothing changed since: the current data. */
  | { kind: "current" }
  /** A dump holds the data as it was. */
  | { kind: "dump"; path: string }
  /** The files of `runs[run].from` with the WAL of a later dump, ended at `wal`. */
  | { kind: "wal"; run: number; wal: number };

/** Where the database's data as of `at` is. */
export function locate(runs: readonly Run[], at: number): PointSource {
  let found: { run: number; mark: number } | undefined;
  let later = false;
  runs.forEach((run, r) => {
    run.marks.forEach((mark, m) => {
      if (mark.at <= at) found = { run: r, mark: m };
      else later = true;
    });
  });
  if (!later) return { kind: "current" };
  if (!found) return { kind: "dump", path: runs[0]!.from };
  const run = runs[found.run]!;
  const next = runs[found.run + 1];
  // The last change of a run: the dump its next run started from is exactly that state.
  if (found.mark === run.marks.length - 1 && next) return { kind: "dump", path: next.from };
  return { kind: "wal", run: found.run, wal: run.marks[found.mark]!.wal };
}

/** Records a change at `at` (changes at one emulated instant are one point). */
export function record(run: Run, at: number, wal: number): void {
  const last = run.marks.at(-1);
  if (last?.at === at) last.wal = wal;
  else run.marks.push({ at, wal });
}

/**
 * Forgets what lies before `keepFrom` (the start of the restore window): whole runs that a later
 * run replaces, and marks, keeping the last one before it (the data at `keepFrom` itself).
 */
export function prune(runs: Run[], keepFrom: number): void {
  while (runs.length > 1 && runs[1]!.startedAt <= keepFrom) runs.shift();
  const first = runs[0];
  if (!first) return;
  const before = first.marks.filter((m) => m.at < keepFrom).length;
  if (before > 1) first.marks.splice(0, before - 1);
}
