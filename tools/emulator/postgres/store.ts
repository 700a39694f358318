// The rows behind each branch's databases: one PGlite cluster per database of
// a branch, started on first connection and stopped when idle, served by
// pglite-socket on a loopback port. A stopped database is a snapshot (a data
// directory tarball on disk, never changed once written), so a child branch,
// or a restore, shares its parent's snapshot instead of copying it.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import type { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import type { BranchRecord } from "../model.ts";
import type { BranchDataEvents } from "../world.ts";

interface Live {
  db: PGlite;
  server: PGLiteSocketServer;
  port: number;
}

/** One database of one branch. */
interface DatabaseData {
  /** The database and session user inside the cluster, fixed at its creation (a rename changes neither). */
  inner: { database: string; user: string };
  /** The data as of the last dump (or the fresh cluster it started as): a tarball's path. */
  snapshot: Promise<string>;
  live: Promise<Live> | undefined;
  /** Client traffic since `snapshot` was taken. */
  dirty: boolean;
  connections: number;
  idleTimer: NodeJS.Timeout | undefined;
}

export interface StoreOptions {
  /** How long a database with no connection keeps running before it is dumped and stopped (real ms). */
  idleMs: number;
}

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
export class DatabaseStore implements BranchDataEvents {
  private readonly options: StoreOptions;
  private readonly branches = new Map<string, Map<string, DatabaseData>>();
  private readonly templates = new Map<string, Promise<string>>();
  private directory: Promise<string> | undefined;
  private files = 0;

  constructor(options: StoreOptions) {
    this.options = options;
  }

  /** Starts (or reuses) the branch's database and holds it for one connection. */
  async lease(branchId: string, database: { name: string; ownerName: string }): Promise<DatabaseLease> {
    const entry = this.entry(branchId, database);
    entry.connections++;
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    try {
      entry.live ??= this.start(entry);
      const { port } = await entry.live;
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
      this.release(entry);
      throw err;
    }
  }

  // --- the world's events --------------------------------------------------

  branchCreated(branch: BranchRecord, parent: BranchRecord): void {
    this.copy(parent.id, branch.id);
  }

  branchPreserved(branch: BranchRecord, preserved: BranchRecord): void {
    const databases = this.branches.get(branch.id);
    if (!databases) return;
    this.branches.delete(branch.id);
    for (const entry of databases.values()) void this.stop(entry, { keepData: true });
    this.branches.set(preserved.id, databases);
  }

  branchRestored(branch: BranchRecord, source: BranchRecord): void {
    // The platform drops the branch's connections: its data is replaced.
    for (const entry of this.branches.get(branch.id)?.values() ?? [])
      void this.stop(entry, { keepData: false });
    this.branches.delete(branch.id);
    this.copy(source.id, branch.id);
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

  /** Stops every database and forgets all data (the emulator's reset or close). */
  async clear(): Promise<void> {
    const entries = [...this.branches.values()].flatMap((databases) => [...databases.values()]);
    this.branches.clear();
    await Promise.all(entries.map((entry) => this.stop(entry, { keepData: false })));
    const directory = this.directory;
    this.directory = undefined;
    if (directory) await rm(await directory, { recursive: true, force: true });
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
      entry = {
        inner,
        snapshot: this.template(inner),
        live: undefined,
        dirty: false,
        connections: 0,
        idleTimer: undefined,
      };
      databases.set(database.name, entry);
    }
    return entry;
  }

  /** A child (or a restored branch) starts from the source's data as it is now: its current snapshot. */
  private copy(fromBranchId: string, toBranchId: string): void {
    const source = this.branches.get(fromBranchId);
    if (!source) return; // never used: the copy starts fresh as well
    const copies = new Map<string, DatabaseData>();
    for (const [name, entry] of source) {
      copies.set(name, {
        inner: entry.inner,
        snapshot: this.currentSnapshot(entry),
        live: undefined,
        dirty: false,
        connections: 0,
        idleTimer: undefined,
      });
    }
    this.branches.set(toBranchId, copies);
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

  private async start(entry: DatabaseData): Promise<Live> {
    const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
    const db = await loadCluster(await entry.snapshot, entry.inner);
    // pglite-socket runs one client's transaction at a time on the single PGlite session.
    const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 1000 });
    await server.start();
    const port = Number(server.getServerConn().split(":").at(-1));
    return { db, server, port };
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
    this.directory ??= mkdtemp(join(tmpdir(), "neon-emulator-data-"));
    return join(await this.directory, `${++this.files}.tar`);
  }

  private reportFailure(work: Promise<unknown>): void {
    work.catch((err: unknown) => console.error("emulator: postgres data:", err));
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
