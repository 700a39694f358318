// The emulator's own API, under /emulator (not part of the platform): add
// projects and branches, simulate a database client connecting, set faults,
// read the request log and counters, reset the world.
import type { HTTPMethod } from "find-my-way";
import { z } from "zod";
import type { ApiResponse, EndpointViews, ResponseShape } from "./api-routes.ts";
import type { PostgresAddresses } from "./connection-uri.ts";
import { connectToEndpoint, findProject } from "./endpoints.ts";
import { PlatformError, notFound } from "./errors.ts";
import { faultsSchema, type Faults } from "./faults.ts";
import type { BranchRecord } from "./model.ts";
import { limitsOf, limitsSchema, limitsView, toPlanLimits } from "./plans.ts";
import { addBranch, addProject, seedAccount } from "./projects.ts";
import { parseInput } from "./requests.ts";
import type { RequestLog } from "./request-log.ts";
import { seedSchema } from "./seed.ts";
import { formatTimestamp } from "./timestamps.ts";
import { endpointView, operationView, projectView } from "./views.ts";
import type { World } from "./world.ts";

export const adminPrefix = "/emulator";

export interface AdminTarget {
  /** Replaced on reset. */
  world: World;
  views: EndpointViews;
  /** The seed of the duration jitter and fault rolls. */
  readonly randomSeed: number;
  readonly shape: ResponseShape;
  readonly faults: Faults;
  readonly requestLog: RequestLog;
  /** Databases whose PGlite cluster is running now (undefined: no Postgres behind the emulator). */
  postgresRunning?: (() => number) | undefined;
  /** Where the emulator's Postgres serves endpoints (undefined: no Postgres behind the emulator). */
  postgres?: PostgresAddresses | undefined;
  /** Back to the seeded world; faults, log, counters and rate budgets cleared; the bootstrap key kept. */
  reset(): void;
}

export interface AdminContext {
  target: AdminTarget;
  params: Record<string, string | undefined>;
  query: URLSearchParams;
  body: unknown;
  now: number;
}

export interface AdminRoute {
  method: HTTPMethod;
  path: string;
  handle(ctx: AdminContext): ApiResponse | Promise<ApiResponse>;
}

const projectBody = seedSchema.shape.projects.unwrap().element;
const accountBody = seedSchema.shape.accounts.unwrap().element;
const branchBody = projectBody.shape.branches.unwrap().element;

const branchView = (b: BranchRecord) => ({
  id: b.id,
  project_id: b.projectId,
  name: b.name,
  ...(b.parentId === undefined ? {} : { parent_id: b.parentId }),
  primary: b.primary,
  created_at: formatTimestamp(b.createdAt),
});

export const adminRoutes: AdminRoute[] = [
  {
    method: "POST",
    path: "/projects",
    handle(ctx) {
      const { world } = ctx.target;
      // `?account_id=` gives the project to another seeded account; the first by default.
      const accountId = ctx.query.get("account_id") ?? world.accounts.keys().next().value ?? "";
      if (!world.accounts.has(accountId)) throw notFound("account");
      const added = addProject(world, accountId, parseInput(projectBody, ctx.body ?? {}), ctx.now, {
        seeded: false,
      });
      return {
        status: 201,
        body: {
          project: projectView(added.project, ctx.target.shape),
          branches: added.branches.map(branchView),
          endpoint: endpointView(added.endpoint, added.project, { ...ctx.target.shape, pendingState: true }),
          operations: added.operations.map((op) => operationView(op, ctx.now)),
        },
      };
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id/branches",
    handle(ctx) {
      const project = findProject(ctx.target.world, ctx.params["project_id"] ?? "");
      const branches = [...ctx.target.world.branches.values()].filter((b) => b.projectId === project.id);
      return { status: 200, body: { branches: branches.map(branchView) } };
    },
  },
  {
    method: "POST",
    path: "/projects/:project_id/branches",
    handle(ctx) {
      const { branch, operations } = addBranch(
        ctx.target.world,
        ctx.params["project_id"] ?? "",
        parseInput(branchBody, ctx.body ?? {}),
        ctx.now,
        { seeded: false },
      );
      return {
        status: 201,
        body: { branch: branchView(branch), operations: operations.map((op) => operationView(op, ctx.now)) },
      };
    },
  },
  {
    method: "POST",
    path: "/endpoints/:endpoint_id/connect",
    handle(ctx) {
      const { world } = ctx.target;
      const { endpoint, operations } = connectToEndpoint(world, ctx.params["endpoint_id"] ?? "", ctx.now);
      return {
        status: 200,
        body: {
          endpoint: endpointView(endpoint, findProject(world, endpoint.projectId), {
            ...ctx.target.shape,
            pendingState: true,
          }),
          operations: operations.map((op) => operationView(op, ctx.now)),
        },
      };
    },
  },
  {
    // Where the emulator's Postgres serves an endpoint, without a password. The platform names it
    // only in a connection URI, which needs a stored password (412 otherwise); its own address is
    // the endpoint's host on 5432, which the emulator's loopback ports are not
    // (docs/emulator.md, "Postgres behind it").
    method: "GET",
    path: "/endpoints/:endpoint_id/postgres",
    async handle(ctx) {
      const endpoint = ctx.target.world.endpoints.get(ctx.params["endpoint_id"] ?? "");
      if (!endpoint) throw notFound("endpoint");
      if (!ctx.target.postgres) throw notFound("postgres (the emulator runs without one)");
      const address = await ctx.target.postgres.address(endpoint, ctx.query.get("pooled") === "true");
      return { status: 200, body: address };
    },
  },
  {
    // A new account, in the seed's form: a user to invite by e-mail, say. Its key's value is shown
    // here only. Until a reset (which brings back the seed's accounts alone).
    method: "POST",
    path: "/accounts",
    handle(ctx) {
      const { world } = ctx.target;
      const body = parseInput(accountBody, ctx.body ?? {});
      const { id, kind, email } = body.account;
      if (id !== undefined && world.accounts.has(id)) throw new PlatformError(409, `account ${id} exists`);
      // A user is known by its e-mail: sharing a project with it reaches this account alone.
      const taken = [...world.accounts.values()].some(
        (a) => a.kind === "user" && kind === "user" && a.email.toLowerCase() === email.toLowerCase(),
      );
      if (taken) throw new PlatformError(409, "a user with this e-mail address exists");
      const { account, key } = seedAccount(world, body, ctx.now);
      return { status: 201, body: { account_id: account.id, api_key: key } };
    },
  },
  {
    // What an account's plan allows (the seed's `limits` form); a PUT replaces them until a reset.
    method: "GET",
    path: "/accounts/:account_id/limits",
    handle(ctx) {
      const account = ctx.target.world.accounts.get(ctx.params["account_id"] ?? "");
      if (!account) throw notFound("account");
      return { status: 200, body: limitsView(limitsOf(account)) };
    },
  },
  {
    method: "PUT",
    path: "/accounts/:account_id/limits",
    handle(ctx) {
      const account = ctx.target.world.accounts.get(ctx.params["account_id"] ?? "");
      if (!account) throw notFound("account");
      account.limits = toPlanLimits(parseInput(limitsSchema, ctx.body ?? {}));
      ctx.target.world.changed();
      return { status: 200, body: limitsView(account.limits) };
    },
  },
  { method: "GET", path: "/faults", handle: (ctx) => ({ status: 200, body: ctx.target.faults.current }) },
  {
    method: "PUT",
    path: "/faults",
    handle(ctx) {
      ctx.target.faults.set(parseInput(faultsSchema, ctx.body ?? {}));
      return { status: 200, body: ctx.target.faults.current };
    },
  },
  {
    method: "DELETE",
    path: "/faults",
    handle(ctx) {
      ctx.target.faults.clear();
      return { status: 200, body: ctx.target.faults.current };
    },
  },
  {
    method: "GET",
    path: "/requests",
    handle(ctx) {
      const { limit } = parseInput(
        z.object({ limit: z.coerce.number().int().min(1).max(100_000).optional() }),
        Object.fromEntries(ctx.query),
      );
      return { status: 200, body: { requests: ctx.target.requestLog.latest(limit) } };
    },
  },
  {
    method: "GET",
    path: "/counters",
    handle: (ctx) => ({ status: 200, body: ctx.target.requestLog.counters() }),
  },
  {
    // The emulator's own footprint: for benchmarks that check memory stays flat.
    method: "GET",
    path: "/stats",
    handle(ctx) {
      const { world } = ctx.target;
      // Under --expose-gc, measure live memory rather than garbage not yet collected.
      (globalThis as { gc?: () => void }).gc?.();
      const memory = process.memoryUsage();
      const cpu = process.cpuUsage();
      return {
        status: 200,
        body: {
          projects: world.projects.size,
          endpoints: world.endpoints.size,
          operations_retained: world.operations.size,
          operations_created: world.operationsCreated,
          memory: { rss_bytes: memory.rss, heap_used_bytes: memory.heapUsed },
          ...(ctx.target.postgresRunning === undefined
            ? {}
            : { postgres: { databases_running: ctx.target.postgresRunning() } }),
          cpu: { user_ms: Math.round(cpu.user / 1000), system_ms: Math.round(cpu.system / 1000) },
        },
      };
    },
  },
  {
    // What the emulator drew for each operation's running phase, per project: a benchmark's floor
    // is the busiest project's sum, since its operations run one after another.
    method: "GET",
    path: "/operations/durations",
    handle(ctx) {
      const { world } = ctx.target;
      return {
        status: 200,
        body: {
          random_seed: ctx.target.randomSeed,
          jitter: world.durations.jitter,
          lock_scope: world.lockScope,
          projects: world.durations.record(),
        },
      };
    },
  },
  {
    method: "POST",
    path: "/reset",
    handle(ctx) {
      ctx.target.reset();
      return { status: 200, body: {} };
    },
  },
];
