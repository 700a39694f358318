// The rows behind each branch's databases: one PGlite cluster per database of
// a branch, started on first connection and stopped when idle, served by
// pglite-socket on a loopback port. A stopped database is a snapshot (a data
// directory tarball on disk, never changed once written), so a child branch,
// or a restore, shares its parent's snapshot instead of copying it. Each
// database keeps its history within the restore window (history.ts), so a
// branch or a platform snapshot can take its data as it was at a past point.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import type { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import type { Clock } from "../clock.ts";
import type { BranchRecord } from "../model.ts";
import type { BranchDataEvents, BranchSource } from "../world.ts";
import { locate, prune, record, type Run } from "./history.ts";
import { removeRows } from "./schema-only.ts";
import { observed, walPosition } from "./served.ts";
import { dataDirectoryAt } from "./wal.ts";

interface Live {
  db: PGlite;
  server: PGLiteSocketServer;
  port: number;
}

/** One database of one branch. */
interface DatabaseData {
  /** The branch it belongs to (a restore's `preserve_under_name` moves it). */
  branchId: string;
  /** The database and session user inside the cluster, fixed at its creation (a rename changes neither). */
  inner: { database: string; user: string };
  /** The data as of the last dump (or the fresh cluster it started as): a tarball's path. */
  snapshot: Promise<string>;
  live: Promise<Live> | undefined;
  /** Client traffic since `snapshot` was taken. */
  dirty: boolean;
  connections: number;
  idleTimer: NodeJS.Timeout | undefined;
  /** Its runs within the restore window, oldest first (history.ts). */
  runs: Run[];
  /** Its WAL position after the last change seen, while it runs. */
  wal: number | undefined;
}

/** A database that is not running, whose data is `snapshot`. */
const stoppedDatabase = (
  branchId: string,
  inner: DatabaseData["inner"],
  snapshot: Promise<string>,
  runs: Run[] = [],
): DatabaseData => ({
  branchId,
  inner,
  snapshot,
  live: undefined,
  dirty: false,
  connections: 0,
  idleTimer: undefined,
  runs,
  wal: undefined,
});

/** A database's data without a cluster: what a platform snapshot keeps of each database. */
interface SavedDatabase {
  inner: DatabaseData["inner"];
  snapshot: Promise<string>;
}

export interface StoreOptions {
  /** How long a database with no connection keeps running before it is dumped and stopped (real ms). */
  idleMs: number;
  /** Where snapshots stay across restarts (beside the state file); default: a temporary directory removed on close. */
  directory?: string | undefined;
  /** The emulated clock: a change is recorded at the time it was made. */
  clock: Clock;
  /** Told of every change of a branch's data; says how far back its history must reach. */
  history?: HistoryListener | undefined;
}

/** The world's side of a branch's history: its LSN and its restore window. */
export interface HistoryListener {
  /** A change of the branch's data at `at` wrote `walBytes` of WAL: its LSN moves on by as much. */
  changed(branchId: string, at: number, walBytes: number): void;
  /** The start of the branch's restore window (emulated ms): what lies before it may be forgotten. */
  windowStart(branchId: string): number;
}

type IndexedDatabase = { inner: { database: string; user: string }; snapshot: string };

/** What a restart finds of the data: each branch's databases, their snapshots and history, and the ports URIs named. */
export interface StoreIndex {
  branches: Record<string, Record<string, IndexedDatabase & { runs?: Run[] }>>;
  /** The platform snapshots' data, by snapshot id (absent in older indexes). */
  saved?: Record<string, Record<string, IndexedDatabase>>;
  ports: Record<string, number>;
}

const indexFile = "index.json";

/** A connection's hold on a running database: where to reach it, and what to call as traffic flows and when it ends. */
export interface DatabaseLease {
  port: number;
  traffic(): void;
  release(): void;
}

// The package exports no package.json: read it beside its entry point (dist/).
const pgliteEntry = createRequire(import.meta.url).resolve("@electric-sql/pglite");
const pgliteVersion = (
  JSON.parse(readFileSync(join(dirname(pgliteEntry), "..", "package.json"), "utf8")) as { version: string }
).version;
/** Fresh clusters, shared by every emulator on the machine: creating one (initdb) takes seconds. */
const templateDir = join(tmpdir(), "neon-emulator-pglite", pgliteVersion);

const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** Writes the cluster's data directory to `path` atomically (other emulators may write the same template). */
async function dumpToFile(db: PGlite, path: string): Promise<string> {
  const tarball = await db.dumpDataDir("none");
  const partial = `${path}.${process.pid}-${randomUUID()}`;
  await writeFile(partial, Buffer.from(await tarball.arrayBuffer()), { mode: 0o600 });
  await rename(partial, path);
  return path;
}

async function loadCluster(path: string, inner?: { database: string; user: string }): Promise<PGlite> {
  const { PGlite } = await import("@electric-sql/pglite");
  const loadDataDir = new Blob([await readFile(path)]);
  return PGlite.create({
    loadDataDir,
    ...(inner === undefined ? {} : { database: inner.database, username: inner.user }),
  });
}

/** Where the emulator's PGlite clusters and their snapshots live, and what keeps them in step with the world. */
export class DatabaseStore implements Omit<
  BranchDataEvents,
  "configApplied" | "endpointRemoved" | "columns" | "mask"
> {
  private readonly options: StoreOptions;
  private readonly branches = new Map<string, Map<string, DatabaseData>>();
  /** The platform snapshots' data, by snapshot id. */
  private readonly saved = new Map<string, Map<string, SavedDatabase>>();
  private readonly templates = new Map<string, Promise<string>>();
  private directory: Promise<string> | undefined;

  constructor(options: StoreOptions) {
    this.options = options;
  }

  /** Starts (or reuses) the branch's database and holds it for one connection. */
  async lease(branchId: string, database: { name: string; ownerName: string }): Promise<DatabaseLease> {
    const entry = this.entry(branchId, database);
    entry.connections++;
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    const starting = (entry.live ??= this.start(entry));
    try {
      const { port } = await starting;
      entry.dirty = true;
      let released = false;
      return {
        port,
        traffic: () => {
          entry.dirty = true;
        },
        release: () => {
          if (released) return;
          released = true;
          this.release(entry);
        },
      };
    } catch (err) {
      // The next connection tries again; a snapshot that could not be made is gone for good, so
      // that database starts over fresh (the failure was reported where it happened).
      if (entry.live === starting) entry.live = undefined;
      const snapshotFailed = await entry.snapshot.then(
        () => false,
        () => true,
      );
      if (snapshotFailed && this.branches.get(branchId)?.get(database.name) === entry) {
        this.branches.get(branchId)?.delete(database.name);
      }
      this.release(entry);
      throw err;
    }
  }

  /**
   * Runs `work` on the branch's database itself (not through a connection): reading its catalog,
   * or changing its rows as the platform's own jobs do. What it changes is recorded in the history.
   */
  async withDatabase<T>(
    branchId: string,
    database: { name: string; ownerName: string },
    work: (db: PGlite) => Promise<T>,
  ): Promise<T> {
    const lease = await this.lease(branchId, database);
    try {
      const entry = this.entry(branchId, database);
      const live = entry.live;
      if (!live) throw new Error(`database ${database.name} of ${branchId} stopped while in use`);
      const { db } = await live;
      const result = await work(db);
      await this.settled(entry, db);
      return result;
    } finally {
      lease.release();
    }
  }

  // --- the world's events --------------------------------------------------

  branchCreated(branch: BranchRecord, parent: BranchRecord, source: BranchSource): void {
    const databases = this.copyOf(parent.id, branch.id, source);
    if (databases) this.branches.set(branch.id, databases);
  }

  snapshotTaken(snapshotId: string, branch: BranchRecord, source: BranchSource): void {
    const copies = this.copyOf(branch.id, branch.id, source);
    if (!copies) return; // never used: a restore starts fresh as well
    this.saved.set(
      snapshotId,
      new Map([...copies].map(([name, entry]) => [name, { inner: entry.inner, snapshot: entry.snapshot }])),
    );
  }

  snapshotDeleted(snapshotId: string): void {
    this.saved.delete(snapshotId);
  }

  branchFromSnapshot(branch: BranchRecord, snapshotId: string): void {
    const saved = this.saved.get(snapshotId);
    if (!saved) return;
    const copies = new Map<string, DatabaseData>();
    for (const [name, data] of saved) copies.set(name, stoppedDatabase(branch.id, data.inner, data.snapshot));
    this.branches.set(branch.id, copies);
  }

  branchPreserved(branch: BranchRecord, preserved: BranchRecord): void {
    const databases = this.branches.get(branch.id);
    if (!databases) return;
    this.branches.delete(branch.id);
    for (const entry of databases.values()) {
      void this.stop(entry, { keepData: true });
      entry.branchId = preserved.id;
    }
    this.branches.set(preserved.id, databases);
  }

  branchRestored(branch: BranchRecord, source: BranchRecord, from: BranchSource): void {
    // The platform drops the branch's connections: its data is replaced.
    for (const entry of this.branches.get(branch.id)?.values() ?? [])
      void this.stop(entry, { keepData: false });
    this.branches.delete(branch.id);
    const copies = this.copyOf(source.id, branch.id, from);
    if (copies) this.branches.set(branch.id, copies);
  }

  branchDeleted(branch: BranchRecord): void {
    for (const entry of this.branches.get(branch.id)?.values() ?? [])
      void this.stop(entry, { keepData: false });
    this.branches.delete(branch.id);
  }

  databaseRenamed(branch: BranchRecord, from: string, to: string): void {
    const databases = this.branches.get(branch.id);
    const entry = databases?.get(from);
    if (!databases || !entry) return;
    databases.delete(from);
    databases.set(to, entry);
  }

  databaseDeleted(branch: BranchRecord, name: string): void {
    const entry = this.branches.get(branch.id)?.get(name);
    if (!entry) return;
    this.branches.get(branch.id)?.delete(name);
    void this.stop(entry, { keepData: false });
  }

  /**
   * Stops every database, keeping its data, and writes the index a restart reads (with the ports
   * to open again). Only with a persistent directory.
   */
  async save(ports: Record<string, number>): Promise<void> {
    if (this.options.directory === undefined) return;
    // Nothing was ever served: leave no directory beside the state file.
    if (this.directory === undefined && this.branches.size === 0 && Object.keys(ports).length === 0) return;
    const index: StoreIndex = { branches: {}, saved: {}, ports };
    const kept = new Set<string>();
    for (const [branchId, databases] of this.branches) {
      const saved: StoreIndex["branches"][string] = {};
      for (const [name, entry] of databases) {
        await this.stop(entry, { keepData: true });
        const snapshot = await entry.snapshot.catch(() => undefined);
        if (snapshot === undefined) continue;
        saved[name] = { inner: entry.inner, snapshot, runs: entry.runs };
        kept.add(snapshot);
        for (const run of entry.runs) kept.add(run.from);
      }
      index.branches[branchId] = saved;
    }
    for (const [snapshotId, databases] of this.saved) {
      const saved: Record<string, IndexedDatabase> = {};
      for (const [name, data] of databases) {
        const snapshot = await data.snapshot.catch(() => undefined);
        if (snapshot === undefined) continue;
        saved[name] = { inner: data.inner, snapshot };
        kept.add(snapshot);
      }
      index.saved![snapshotId] = saved;
    }
    const directory = await this.dir();
    await writeFile(join(directory, indexFile), JSON.stringify(index), { mode: 0o600 });
    // Snapshots nothing holds any more (deleted, restored over, superseded by a later dump, out of the window).
    for (const file of await readdir(directory)) {
      const path = join(directory, file);
      if (file.endsWith(".tar") && !kept.has(path)) await rm(path, { force: true });
    }
  }

  /** Reads what `save` wrote (nothing when it never ran); answers the ports to open again. */
  async load(): Promise<Record<string, number>> {
    if (this.options.directory === undefined) return {};
    let index: StoreIndex;
    try {
      index = JSON.parse(await readFile(join(this.options.directory, indexFile), "utf8")) as StoreIndex;
    } catch {
      return {};
    }
    for (const [branchId, databases] of Object.entries(index.branches)) {
      const entries = new Map<string, DatabaseData>();
      for (const [name, { inner, snapshot, runs = [] }] of Object.entries(databases)) {
        // A snapshot that is gone (a cleaned temporary directory): that database starts fresh.
        if (!(await exists(snapshot))) continue;
        // History whose dumps are gone cannot be rebuilt: the database keeps its data only.
        const whole = (await Promise.all(runs.map((run) => exists(run.from)))).every(Boolean);
        entries.set(name, stoppedDatabase(branchId, inner, Promise.resolve(snapshot), whole ? runs : []));
      }
      this.branches.set(branchId, entries);
    }
    for (const [snapshotId, databases] of Object.entries(index.saved ?? {})) {
      const saved = new Map<string, SavedDatabase>();
      for (const [name, { inner, snapshot }] of Object.entries(databases)) {
        if (await exists(snapshot)) saved.set(name, { inner, snapshot: Promise.resolve(snapshot) });
      }
      this.saved.set(snapshotId, saved);
    }
    return index.ports;
  }

  /** Stops every database and forgets all data (the emulator's reset or close). */
  async clear(): Promise<void> {
    const entries = [...this.branches.values()].flatMap((databases) => [...databases.values()]);
    this.branches.clear();
    this.saved.clear();
    await Promise.all(entries.map((entry) => this.stop(entry, { keepData: false })));
    const directory = this.directory;
    this.directory = undefined;
    if (directory) await rm(await directory, { recursive: true, force: true });
    else if (this.options.directory !== undefined)
      await rm(this.options.directory, { recursive: true, force: true });
  }

  /** Running databases, for the emulator's stats. */
  get running(): number {
    let count = 0;
    for (const databases of this.branches.values()) {
      for (const entry of databases.values()) if (entry.live) count++;
    }
    return count;
  }

  // --- internals -----------------------------------------------------------

  /** The branch's database, created from a fresh cluster the first time it is used. */
  private entry(branchId: string, database: { name: string; ownerName: string }): DatabaseData {
    let databases = this.branches.get(branchId);
    if (!databases) {
      databases = new Map();
      this.branches.set(branchId, databases);
    }
    let entry = databases.get(database.name);
    if (!entry) {
      const inner = { database: database.name, user: database.ownerName };
      entry = stoppedDatabase(branchId, inner, this.template(inner));
      databases.set(database.name, entry);
    }
    return entry;
  }

  /**
   * Copies of a branch's databases for `toBranchId`, as they are now or were at `source.at`, whole
   * or without rows; undefined when the branch never used them (the copy starts fresh as well).
   */
  private copyOf(
    fromBranchId: string,
    toBranchId: string,
    source: Partial<BranchSource>,
  ): Map<string, DatabaseData> | undefined {
    const from = this.branches.get(fromBranchId);
    if (!from) return undefined;
    const copies = new Map<string, DatabaseData>();
    for (const [name, entry] of from) {
      if (source.databases && !source.databases.includes(name)) continue;
      let data = source.at === undefined ? this.currentSnapshot(entry) : this.dataAt(entry, source.at);
      if (source.schemaOnly) data = data.then((path) => this.withoutRows(path, entry.inner));
      this.reportFailure(data);
      copies.set(name, stoppedDatabase(toBranchId, entry.inner, data));
    }
    return copies;
  }

  /** The entry's data now: a new dump when clients changed it since the last one. */
  private currentSnapshot(entry: DatabaseData): Promise<string> {
    const live = entry.live;
    if (live && entry.dirty) {
      entry.dirty = false;
      entry.snapshot = this.newFile().then(async (path) => dumpToFile((await live).db, path));
      this.reportFailure(entry.snapshot);
    }
    return entry.snapshot;
  }

  /** The entry's data as it was at `at` (emulated ms), from its history. */
  private async dataAt(entry: DatabaseData, at: number): Promise<string> {
    const source = locate(entry.runs, at);
    if (source.kind === "current") return this.currentSnapshot(entry);
    if (source.kind === "dump") return source.path;
    const before = entry.runs[source.run]!.from;
    const after = entry.runs[source.run + 1]?.from ?? (await this.currentSnapshot(entry));
    const copy = dataDirectoryAt(await readFile(before), await readFile(after), source.wal);
    const path = await this.newFile();
    await writeFile(path, copy, { mode: 0o600 });
    return path;
  }

  /** A copy of the dump at `path` with every row removed (`init_source: "schema-only"`). */
  private async withoutRows(path: string, inner: DatabaseData["inner"]): Promise<string> {
    const db = await loadCluster(path, inner);
    try {
      await removeRows(db);
      return await dumpToFile(db, await this.newFile());
    } finally {
      await db.close();
    }
  }

  private async start(entry: DatabaseData): Promise<Live> {
    const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
    const from = await entry.snapshot;
    const db = await loadCluster(from, entry.inner);
    entry.wal = await walPosition(db);
    entry.runs.push({ from, startedAt: this.options.clock.now(), marks: [] });
    this.forgetBefore(entry);
    const served = observed(db, () => this.settled(entry, db).catch(reportHistoryFailure));
    // pglite-socket runs one client's transaction at a time on the single PGlite session.
    const server = new PGLiteSocketServer({ db: served, host: "127.0.0.1", port: 0, maxConnections: 1000 });
    await server.start();
    const port = Number(server.getServerConn().split(":").at(-1));
    return { db, server, port };
  }

  /** After work that may have changed the database: a moved WAL position is a change, recorded now. */
  private async settled(entry: DatabaseData, db: PGlite): Promise<void> {
    const wal = await walPosition(db);
    const previous = entry.wal;
    entry.wal = wal;
    const run = entry.runs.at(-1);
    if (previous === undefined || wal <= previous || !run) return;
    entry.dirty = true;
    const at = this.options.clock.now();
    record(run, at, wal);
    this.options.history?.changed(entry.branchId, at, wal - previous);
    this.forgetBefore(entry);
  }

  /** Drops the history before the branch's restore window. */
  private forgetBefore(entry: DatabaseData): void {
    const start = this.options.history?.windowStart(entry.branchId);
    if (start !== undefined) prune(entry.runs, start);
  }

  private release(entry: DatabaseData): void {
    entry.connections--;
    if (entry.connections > 0 || !entry.live) return;
    entry.idleTimer = setTimeout(() => {
      entry.idleTimer = undefined;
      if (entry.connections === 0) void this.stop(entry, { keepData: true });
    }, this.options.idleMs);
    entry.idleTimer.unref();
  }

  /**
   * Stops the running cluster (dropping its connections), dumping it first when its data is kept
   * and changed. Never rejects: failures are reported.
   */
  private stop(entry: DatabaseData, { keepData }: { keepData: boolean }): Promise<void> {
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    const live = entry.live;
    if (!live) return Promise.resolve();
    entry.live = undefined;
    const previous = entry.snapshot;
    const changed = keepData && entry.dirty;
    entry.dirty = false;
    const kept = changed ? live.then(async ({ db }) => dumpToFile(db, await this.newFile())) : previous;
    if (keepData) entry.snapshot = kept;
    const stopped = (async () => {
      await kept.catch(() => undefined);
      const { db, server } = await live;
      await server.stop();
      await db.close();
    })();
    this.reportFailure(stopped);
    if (changed) this.reportFailure(kept);
    return stopped.catch(() => undefined);
  }

  /** A fresh cluster holding one database owned by one role, cached on disk by name. */
  private template(inner: { database: string; user: string }): Promise<string> {
    const key = `${inner.database}\0${inner.user}`;
    let template = this.templates.get(key);
    if (!template) {
      template = (async () => {
        await mkdir(templateDir, { recursive: true, mode: 0o700 });
        const base = join(templateDir, "base.tar");
        const named = join(templateDir, `${Buffer.from(key).toString("base64url")}.tar`);
        if (await exists(named)) return named;
        if (!(await exists(base))) {
          const { PGlite } = await import("@electric-sql/pglite");
          const db = await PGlite.create();
          await dumpToFile(db, base);
          await db.close();
        }
        const db = await loadCluster(base);
        await db.exec(`CREATE ROLE ${quoteIdent(inner.user)} SUPERUSER LOGIN`);
        await db.exec(`CREATE DATABASE ${quoteIdent(inner.database)} OWNER ${quoteIdent(inner.user)}`);
        await dumpToFile(db, named);
        await db.close();
        return named;
      })();
      this.templates.set(key, template);
      template.catch(() => this.templates.delete(key));
    }
    return template;
  }

  /** A new snapshot path in this emulator's own directory (removed by `clear`). */
  private async newFile(): Promise<string> {
    return join(await this.dir(), `${randomUUID()}.tar`);
  }

  private dir(): Promise<string> {
    const persistent = this.options.directory;
    this.directory ??=
      persistent === undefined
        ? mkdtemp(join(tmpdir(), "neon-emulator-data-"))
        : mkdir(persistent, { recursive: true, mode: 0o700 }).then(() => persistent);
    return this.directory;
  }

  private reportFailure(work: Promise<unknown>): void {
    work.catch((err: unknown) => console.error("emulator: postgres data:", err));
  }
}

function reportHistoryFailure(err: unknown): void {
  console.error("emulator: postgres history:", err);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
