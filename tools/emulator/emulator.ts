// The emulator: the platform API on loopback. Wires the world, the routes,
// faults, rate limits, the request log and the state file into one HTTP server.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import FindMyWay, { type HTTPMethod } from "find-my-way";
import type { z } from "zod";
import { checkAccess } from "./access.ts";
import { adminPrefix, adminRoutes, type AdminContext, type AdminTarget } from "./admin-routes.ts";
import { authenticate, recordKeyUse } from "./api-keys.ts";
import {
  apiRoutes,
  defaultResponseShape,
  EndpointViews,
  type ApiContext,
  type ApiResponse,
  type ResponseShape,
} from "./api-routes.ts";
import { anonymizedRoutes } from "./anonymized-routes.ts";
import { catalogRoutes } from "./catalog-routes.ts";
import { orgApiKeyRoutes } from "./org-api-keys.ts";
import { snapshotRoutes } from "./snapshot-routes.ts";
import { projectRoutes } from "./project-routes.ts";
import { createClock, type Clock } from "./clock.ts";
import { PlatformError, projectLocked } from "./errors.ts";
import { Faults } from "./faults.ts";
import { readJsonBody, sendEmpty, sendError, sendJson } from "./http.ts";
import { newRequestId } from "./ids.ts";
import { PostgresFront } from "./postgres/front.ts";
import { recordChange, windowStart } from "./branch-history.ts";
import { maskBranch, readColumns } from "./masking/apply.ts";
import { DatabaseStore } from "./postgres/store.ts";
import { seedWorld } from "./projects.ts";
import { loadSeedData } from "./seed-data.ts";
import { sharingRoutes } from "./sharing.ts";
import { RateLimiter, platformRateLimits, type RateLimits } from "./rate-limit.ts";
import { RequestLog, type RequestLogEntry } from "./request-log.ts";
import { newRandomSeed, seededRandom } from "./random.ts";
import { parseSeed, type AccountSeed, type Seed, type seedSchema } from "./seed.ts";
import { loadState, saveState } from "./state-file.ts";
import { World, type BranchDataEvents, type WorldOptions } from "./world.ts";

export const apiPrefix = "/api/v2";

export interface EmulatorOptions {
  /** Listen address (default 127.0.0.1) and port (default 0: any free port). */
  host?: string;
  port?: number;
  /** The world to start with (a parsed or raw seed); default: an account with only its bootstrap key. */
  seed?: Seed | z.input<typeof seedSchema>;
  /** Emulated milliseconds per real millisecond (default 1); ignored when `clock` is given. */
  speed?: number;
  clock?: Clock;
  /** Emulated duration of an operation's running phase, overall or per action (default 1000 ms). */
  operationDurationMs?: WorldOptions["operationDurationMs"];
  /**
   * Each run of an operation lasts its duration × (1 ± jitter), drawn uniformly (0..1; default 0).
   * The platform's durations vary; a fixed one is too easy for a client to learn.
   */
  operationDurationJitter?: number;
  /** Seed of the duration jitter and fault rolls, so a run repeats (default: a fresh one, reported). */
  randomSeed?: number;
  /** Emulated interval of check_availability operations; 0 (the default) disables them. */
  checkAvailabilityIntervalMs?: number;
  /** Operations kept per project before the oldest finished ones are dropped (default 2000). */
  maxOperationsPerProject?: number;
  /** How long new operations stay out of the operations list (eventual consistency; default 0). */
  operationsListLagMs?: number;
  /** What a running operation locks against new mutations: the project (default) or only its branch (optimistic). */
  lockScope?: WorldOptions["lockScope"];
  /**
   * The status of a DELETE of an endpoint that does not exist or is already deleted: 204 with no
   * body (default, as the OpenAPI document says), or 404 as for other unknown objects.
   */
  missingEndpointDelete?: 204 | 404;
  /** The most branches one page of the branch list holds, whatever `limit` asks (default 10,000). */
  branchPageMax?: number;
  /**
   * Leave out response fields the OpenAPI document marks deprecated (`pooler_enabled`,
   * `pooler_mode`, `cpu_used_sec`, `primary`, `login`), as the platform may once their sunset passes
   * (default false: the document still lists them as required).
   */
  dropDeprecatedFields?: boolean;
  /**
   * Whether a user's key must name `org_id` to list or create projects once the user belongs to
   * an organization (default true, as the platform: 400 "org_id is required"). `false` lists all
   * of the user's projects and creates personal ones without it.
   */
  orgIdRequired?: boolean;
  /** The platform's limits by default; `false` turns them off. */
  rateLimits?: RateLimits | false;
  /** Keep the world in this file across restarts (loaded at start when it exists). */
  stateFile?: string;
  /** Largest accepted request body (default 1 MiB). */
  maxBodyBytes?: number;
  /** Requests kept in the admin request log (default 1000). */
  requestLogSize?: number;
  /** Source of randomness for fault rates (default: seeded from `randomSeed`). */
  random?: () => number;
  /**
   * The real Postgres behind connection URIs (PGlite, started per database on first connection),
   * or `false` for URIs in the platform's host form with nothing behind them (default: on).
   */
  postgres?: PostgresOptions | false;
}

export interface PostgresOptions {
  /** The address the endpoints' Postgres ports listen on (default 127.0.0.1). */
  listenHost?: string;
  /** The host connection URIs name, e.g. one a pod can reach (default: the listen host). */
  advertisedHost?: string;
  /** How long a database with no connection keeps running before it is dumped and stopped (real ms; default 30000). */
  idleMs?: number;
}

export interface Emulator {
  /** Base URL of the platform API, ending in /api/v2. */
  readonly url: string;
  /** Base URL of the admin API, ending in /emulator. */
  readonly adminUrl: string;
  /** The value of the seeded bootstrap key (of the first account). */
  readonly bootstrapKey: string;
  /** Every seeded account's bootstrap key value, by account id, in seed order. */
  readonly bootstrapKeys: ReadonlyMap<string, string>;
  readonly clock: Clock;
  readonly faults: Faults;
  readonly requestLog: RequestLog;
  /** Writes the state file now (when there is one). */
  flush(): Promise<void>;
  /** Stops listening, drops open connections and writes the state file. */
  close(): Promise<void>;
}

const withBody = new Set(["POST", "PATCH", "PUT"]);

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const seed = parseSeed(options.seed);
  const saved = options.stateFile === undefined ? undefined : await loadState(options.stateFile);
  // A restarted emulator's clock never runs behind the time its world was saved at.
  const clock =
    options.clock ??
    createClock({
      speed: options.speed ?? 1,
      startAt: Math.max(Date.now(), saved?.world.savedAt ?? 0),
    });
  const randomSeed = options.randomSeed ?? newRandomSeed();
  // Two streams: how many faults fire never shifts the durations drawn, and vice versa.
  const faults = new Faults(options.random ?? seededRandom(randomSeed ^ 0x9e3779b9));
  const durationRandom = seededRandom(randomSeed);
  const worldOptions: WorldOptions = {
    clock,
    random: durationRandom,
    randomSeed,
    ...givenOptions(options, [
      "operationDurationMs",
      "operationDurationJitter",
      "checkAvailabilityIntervalMs",
      "maxOperationsPerProject",
      "operationsListLagMs",
      "lockScope",
    ]),
    operationFault: faults.operationFault,
  };
  // Made before the world exists, which tells them of its changes; the front reads it through `target`.
  const postgresOptions = options.postgres === false ? undefined : (options.postgres ?? {});
  const store = postgresOptions
    ? new DatabaseStore({
        idleMs: postgresOptions.idleMs ?? 30_000,
        // Beside the state file, the rows and ports survive a restart too.
        directory: options.stateFile === undefined ? undefined : `${options.stateFile}.postgres`,
        clock,
        // A branch's LSN and restore window are the world's (the current one: a reset replaces it).
        history: {
          changed: (branchId, at, walBytes) => recordChange(target.world, branchId, at, walBytes),
          windowStart: (branchId) => {
            const branch = target.world.branches.get(branchId);
            return branch === undefined ? -Infinity : windowStart(target.world, branch, clock.now());
          },
        },
      })
    : undefined;
  const listenHost = postgresOptions?.listenHost ?? "127.0.0.1";
  const front =
    store &&
    new PostgresFront({
      listenHost,
      advertisedHost: postgresOptions?.advertisedHost ?? listenHost,
      store,
      world: () => target.world,
      clock,
      changed: () => scheduleSave(),
    });
  if (store && front) worldOptions.data = postgresEvents(store, front);
  let world: World;
  let bootstrapKeys: Map<string, string>;
  if (saved) {
    world = World.restore(worldOptions, saved.world);
    bootstrapKeys = saved.bootstrapKeys;
  } else {
    ({ world, bootstrapKeys } = seedWorld(worldOptions, seed));
  }
  const bootstrapKey = bootstrapKeys.values().next().value ?? "";
  // A reset brings back the same accounts with the same keys, even where the seed let them be generated.
  const accountIds = [...world.accounts.keys()];
  const pin = (account: AccountSeed, i: number): AccountSeed => {
    const id = accountIds[i];
    const key = id === undefined ? undefined : bootstrapKeys.get(id);
    return {
      ...account,
      account: { ...account.account, ...(id === undefined ? {} : { id }) },
      bootstrap_key: { ...account.bootstrap_key, ...(key === undefined ? {} : { key }) },
    };
  };
  const pinnedSeed: Seed = { ...pin(seed, 0), accounts: seed.accounts.map((a, i) => pin(a, i + 1)) };
  const requestLog = new RequestLog(options.requestLogSize ?? 1000);
  const limits = options.rateLimits === undefined ? platformRateLimits : options.rateLimits;
  const rateLimiter = limits === false ? undefined : new RateLimiter(limits);
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;

  const shape: ResponseShape = {
    missingEndpointDelete: options.missingEndpointDelete ?? defaultResponseShape.missingEndpointDelete,
    dropDeprecatedFields: options.dropDeprecatedFields ?? defaultResponseShape.dropDeprecatedFields,
    branchPageMax: options.branchPageMax ?? defaultResponseShape.branchPageMax,
    orgIdRequired: options.orgIdRequired ?? defaultResponseShape.orgIdRequired,
  };
  const target: AdminTarget = {
    world,
    randomSeed,
    shape,
    views: new EndpointViews(world, shape),
    faults,
    requestLog,
    postgresRunning: store && (() => store.running),
    postgres: front,
    reset() {
      // The jitter restarts from the seed too, so a reset run repeats the first one.
      const fresh = seedWorld({ ...worldOptions, random: seededRandom(randomSeed) }, pinnedSeed);
      target.world = fresh.world;
      target.views = new EndpointViews(fresh.world, shape);
      faults.clear();
      requestLog.clear();
      rateLimiter?.reset();
      // The seeded world's branches start with the seed's data only; open ports and connections go.
      void Promise.all([front?.close(), store?.clear()])
        .then(() => store && loadSeedData(fresh.world, pinnedSeed, store))
        .catch((err: unknown) => console.error("emulator: postgres reset:", err));
    },
  };
  const apiRouter = FindMyWay({ ignoreTrailingSlash: true });
  for (const route of [
    ...apiRoutes,
    ...projectRoutes,
    ...catalogRoutes,
    ...sharingRoutes,
    ...orgApiKeyRoutes,
    ...anonymizedRoutes,
    ...snapshotRoutes,
  ])
    apiRouter.on(route.method, route.path, () => undefined, route);
  const adminRouter = FindMyWay({ ignoreTrailingSlash: true });
  for (const route of adminRoutes) adminRouter.on(route.method, route.path, () => undefined, route);

  // --- persistence: written shortly after changes, and on close -------------
  let saving: Promise<void> = Promise.resolve();
  let saveTimer: NodeJS.Timeout | undefined;
  const flush = (): Promise<void> => {
    if (options.stateFile === undefined) return Promise.resolve();
    const path = options.stateFile;
    clearTimeout(saveTimer);
    saveTimer = undefined;
    const state = { bootstrapKeys, world: target.world.snapshot() };
    saving = saving.then(() => saveState(path, state));
    return saving;
  };
  const scheduleSave = (): void => {
    if (options.stateFile === undefined || saveTimer !== undefined) return;
    saveTimer = setTimeout(() => {
      flush().catch((err: unknown) => console.error("emulator: cannot write the state file:", err));
    }, 100);
  };

  async function handleApi(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams) {
    const started = performance.now();
    const method = req.method ?? "GET";
    const requestId = headerValue(req, "x-request-id") ?? newRequestId();
    const match = apiRouter.find(method as HTTPMethod, path.slice(apiPrefix.length) || "/");
    const route = match?.store as (typeof apiRoutes)[number] | undefined;
    const routeName = route ? `${method} ${route.path}` : "unknown";
    const entry = (status: number, fault?: string): RequestLogEntry => ({
      time: new Date().toISOString(),
      method,
      path,
      route: routeName,
      status,
      request_id: requestId,
      duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
      ...(fault === undefined ? {} : { fault }),
    });
    const fail = (status: number, message: string, fault?: string, code?: string): void => {
      sendError(res, status, message, requestId, code);
      requestLog.add(entry(status, fault));
    };

    const fault = route ? faults.forRequest(method, route.path) : undefined;
    if (fault && fault.latencyMs > 0) await sleep(fault.latencyMs);
    if (fault?.reset) {
      req.socket.destroy();
      requestLog.add(entry(0, "reset"));
      return;
    }
    if (fault?.status !== undefined) {
      if (fault.retryAfterS !== undefined) res.setHeader("retry-after", String(fault.retryAfterS));
      fail(fault.status, faultMessage(fault.status), "status");
      return;
    }

    const token = /^Bearer\s+(\S+)\s*$/i.exec(headerValue(req, "authorization") ?? "")?.[1];
    const key = token === undefined ? undefined : authenticate(target.world, token);
    if (!key) {
      fail(
        401,
        token === undefined ? "authorization header is missing or malformed" : "invalid or revoked API key",
      );
      return;
    }
    if (!route || !match) {
      fail(404, "not found");
      return;
    }
    // The platform's limits are per account: every key of one account spends the same budget.
    if (rateLimiter && !rateLimiter.admit(key.accountId, routeName)) {
      fail(429, "rate limit exceeded");
      return;
    }

    let response: ApiResponse;
    try {
      const body = withBody.has(method) ? await readJsonBody(req, maxBodyBytes) : undefined;
      const now = clock.now();
      target.world.advance(now);
      const account = target.world.account(key.accountId);
      // A project out of the key's reach is as unknown as one that never existed (access.ts).
      checkAccess(target.world, { account, key }, routeName, match.params);
      const ctx: ApiContext = {
        world: target.world,
        views: target.views,
        shape,
        account,
        key,
        params: match.params,
        query,
        body,
        now,
        postgres: front,
        unavailableProjects: faults.unavailableProjects,
      };
      response = await route.handle(ctx);
      recordKeyUse(key, remoteAddress(req), now);
    } catch (err) {
      if (!(err instanceof PlatformError)) console.error("emulator: request failed:", err);
      if (err instanceof PlatformError) fail(err.status, err.message, undefined, err.code);
      else fail(500, "internal error");
      return;
    } finally {
      scheduleSave();
    }
    if (fault?.loseResponse) {
      // The change is applied; the client never hears about it.
      req.socket.destroy();
      requestLog.add(entry(0, "lose_response"));
      return;
    }
    sendResponse(res, response, requestId);
    requestLog.add(entry(response.status, fault ? "latency" : undefined));
  }

  async function handleAdmin(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: URLSearchParams,
  ) {
    const method = req.method ?? "GET";
    const requestId = headerValue(req, "x-request-id") ?? newRequestId();
    const match = adminRouter.find(method as HTTPMethod, path.slice(adminPrefix.length) || "/");
    if (!match) {
      sendError(res, 404, "not found", requestId);
      return;
    }
    try {
      const body = withBody.has(method) ? await readJsonBody(req, maxBodyBytes) : undefined;
      const now = clock.now();
      target.world.advance(now);
      const ctx: AdminContext = { target, params: match.params, query, body, now };
      const response = await (match.store as (typeof adminRoutes)[number]).handle(ctx);
      sendResponse(res, response, requestId);
    } catch (err) {
      if (!(err instanceof PlatformError)) console.error("emulator: admin request failed:", err);
      sendError(
        res,
        err instanceof PlatformError ? err.status : 500,
        errorMessage(err),
        requestId,
        err instanceof PlatformError ? err.code : "",
      );
    } finally {
      scheduleSave();
    }
  }

  const server: Server = createServer((req, res) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const query = new URLSearchParams(q < 0 ? "" : url.slice(q + 1));
    const handler =
      path === apiPrefix || path.startsWith(`${apiPrefix}/`)
        ? handleApi
        : path === adminPrefix || path.startsWith(`${adminPrefix}/`)
          ? handleAdmin
          : undefined;
    if (!handler) {
      sendError(res, 404, "not found", headerValue(req, "x-request-id") ?? newRequestId());
      return;
    }
    handler(req, res, path, query).catch((err: unknown) => {
      console.error("emulator: unexpected failure:", err);
      if (!res.headersSent) sendError(res, 500, "internal error", newRequestId());
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const origin = `http://${host}:${address.port}`;
  if (!saved) {
    if (store) await loadSeedData(world, seed, store);
    scheduleSave();
  } else if (store && front) await front.reopen(await store.load());

  return {
    url: `${origin}${apiPrefix}`,
    adminUrl: `${origin}${adminPrefix}`,
    bootstrapKey,
    bootstrapKeys,
    clock,
    faults,
    requestLog,
    flush,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      if (store && front) {
        // With a state file the data is kept for the next run; otherwise it goes.
        const ports = await front.openPorts();
        await front.close();
        if (options.stateFile === undefined) await store.clear();
        else await store.save(ports);
      }
      await flush();
    },
  };
}

/** The store keeps the branches' data in step; the front drops sessions where the platform would. */
function postgresEvents(store: DatabaseStore, front: PostgresFront): BranchDataEvents {
  return {
    branchCreated: (branch, parent, source) => store.branchCreated(branch, parent, source),
    snapshotTaken: (snapshotId, branch, source) => store.snapshotTaken(snapshotId, branch, source),
    snapshotDeleted: (snapshotId) => store.snapshotDeleted(snapshotId),
    branchFromSnapshot: (branch, snapshotId) => store.branchFromSnapshot(branch, snapshotId),
    columns: (branch, database) => store.withDatabase(branch.id, database, readColumns),
    mask: (branch, rules, random) => maskBranch(store, branch, rules, random),
    branchPreserved: (branch, preserved) => store.branchPreserved(branch, preserved),
    branchRestored: (branch, source, from) => store.branchRestored(branch, source, from),
    branchDeleted: (branch) => store.branchDeleted(branch),
    databaseRenamed: (branch, from, to) => store.databaseRenamed(branch, from, to),
    databaseDeleted: (branch, name) => store.databaseDeleted(branch, name),
    configApplied: (endpointId) => front.dropSessions(endpointId),
    endpointRemoved: (endpointId) => front.closeEndpoint(endpointId),
  };
}

/** The options among `keys` that are set; one left out stays out, so the world's default applies. */
function givenOptions<K extends keyof EmulatorOptions>(
  options: EmulatorOptions,
  keys: readonly K[],
): Partial<Pick<EmulatorOptions, K>> {
  const given: Partial<Pick<EmulatorOptions, K>> = {};
  for (const key of keys) if (options[key] !== undefined) given[key] = options[key];
  return given;
}

function sendResponse(res: ServerResponse, response: ApiResponse, requestId: string): void {
  if ("empty" in response) sendEmpty(res, response.status, requestId);
  else {
    const json = "json" in response ? response.json : JSON.stringify(response.body);
    sendJson(res, response.status, json, requestId);
  }
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function remoteAddress(req: IncomingMessage): string {
  const addr = req.socket.remoteAddress ?? "";
  return addr.startsWith("::ffff:") ? addr.slice(7) : addr;
}

function errorMessage(err: unknown): string {
  return err instanceof PlatformError ? err.message : "internal error";
}

function faultMessage(status: number): string {
  switch (status) {
    case 423:
      return projectLocked().message;
    case 429:
      return "rate limit exceeded";
    case 503:
      return "service unavailable";
    case 400:
      return "request refused: invalid attribute";
    case 422:
      return "request refused by the project's current plan or state";
    default:
      return "internal error";
  }
}
