/**
 * The operator's only door to the platform: one typed method per route it uses. Methods speak
 * camelCase; the platform's snake_case stays in schemas.ts. Budget, retries, errors and
 * observability live in exchange.ts; batching in snapshot.ts and operations.ts.
 */
import pino, { type Logger } from "pino";
import { RateBudget, type RateLimits } from "./budget.ts";
import { Exchange, type RetryOptions, type RouteCall } from "./exchange.ts";
import { noMetrics, type PlatformMetrics } from "./metrics.ts";
import {
  type OperationPolling,
  OperationsTracker,
  type OperationsOutcome,
  type OperationsPage,
  type OperationsSource,
  type OperationsTrackerOptions,
  waitForOperations,
  type WaitOptions,
} from "./operations.ts";
import {
  type ApiKey,
  type ApiKeyCreated,
  type AuthDetails,
  authDetailsWire,
  apiKeyCreatedWire,
  type ApiKeyRevoked,
  apiKeyRevokedWire,
  apiKeysWire,
  type Endpoint,
  endpointBody,
  type EndpointCreateSpec,
  type EndpointMutation,
  endpointMutationWire,
  type EndpointPatch,
  endpointResponseWire,
  endpointsResponseWire,
  type Operation,
  operationResponseWire,
  operationsPageWire,
  type Project,
  projectsPageWire,
} from "./schemas.ts";
import {
  type Branch,
  branchBody,
  type BranchCreateSpec,
  type BranchMutation,
  branchMutationWire,
  type BranchPatch,
  branchResponseWire,
  branchesResponseWire,
} from "./branch-schemas.ts";
import {
  connectionUriWire,
  type ConnectionUriQuery,
  type PasswordReset,
  passwordResetWire,
  rolePasswordWire,
} from "./role-schemas.ts";
import {
  type BranchRestore,
  type BranchRestoreSpec,
  branchRestoreWire,
  type Database,
  databaseBody,
  type DatabaseCreateSpec,
  type DatabaseMutation,
  databaseMutationWire,
  databasesResponseWire,
  restoreBody,
  type Role,
  roleBody,
  type RoleMutation,
  roleMutationWire,
  rolesResponseWire,
} from "./branch-content-schemas.ts";
import { BranchSnapshot, EndpointSnapshot } from "./snapshot.ts";
import { OperationDurations } from "./durations.ts";
import {
  LockedError,
  PasswordNotStoredError,
  PlatformError,
  ProjectBusyError,
  RateLimitedError,
} from "./errors.ts";
import { MutationGate, type MutationGateOptions } from "./gate.ts";
import { Transport, type TransportTimeouts } from "./transport.ts";

export const DEFAULT_BASE_URL = "https://console.neon.tech/api/v2";

export interface PlatformClientOptions extends TransportTimeouts {
  /** Ends with /api/v2. Default: the platform's public URL. */
  baseUrl?: string;
  apiKey: string;
  /**
   * The account's budget, shared by every client of the account's keys (the platform's limit is
   * per account: see the operator's PlatformAccess). Default: a budget of this client's own.
   */
  budget?: RateBudget;
  /** Limits for the default budget; ignored when `budget` is given. */
  limits?: Partial<RateLimits>;
  logger?: Logger;
  metrics?: PlatformMetrics;
  retry?: RetryOptions;
  /** Interval between looks at running operations. Default 5 s (the platform's recommendation). */
  pollIntervalMs?: number;
  /** How long an endpoint or branch list is shared by readers of the same project. Default 1 s. */
  snapshotWindowMs?: number;
  operations?: OperationsTrackerOptions;
  /** How running operations are looked at (overrides `operations.polling`). Default `batched`. */
  operationPolling?: OperationPolling;
  /** Maximum sockets kept open to the platform. Default 32. */
  connections?: number;
  /**
   * Endpoint mutations of one project go one at a time, each when the operations of the last are
   * expected to have ended (gate.ts). `false` sends them as they come (and into 423s). Default on.
   */
  mutationGate?: false | Partial<Omit<MutationGateOptions, "expected">>;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface MutationOptions extends CallOptions {
  /**
   * Who asks (a resource's key): a mutation held back by the project's gate is told when its own
   * turn comes, counted in the order the tickets first asked.
   */
  ticket?: string;
}

/** Paths carry ids; ids never contain "/", but encoding keeps a bad one from changing the route. */
const id = (value: string | number): string => encodeURIComponent(String(value));

export class PlatformClient implements OperationsSource {
  readonly baseUrl: string;
  readonly budget: RateBudget;
  readonly pollIntervalMs: number;
  private readonly transport: Transport;
  private readonly exchange: Exchange;
  private readonly snapshots: EndpointSnapshot;
  private readonly branchSnapshots: BranchSnapshot;
  private readonly trackers = new Map<string, OperationsTracker>();
  /** Typical operation durations, shared by the client's projects (they are the platform's). */
  private readonly durations = new OperationDurations();
  private readonly trackerOptions: OperationsTrackerOptions;
  private readonly gate: MutationGate | undefined;

  constructor(options: PlatformClientOptions) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.budget = options.budget ?? new RateBudget(options.limits);
    this.pollIntervalMs = options.pollIntervalMs ?? 5_000;
    if (options.mutationGate !== false) {
      this.gate = new MutationGate({
        ...options.mutationGate,
        expected: (ops, share) => this.durations.endedBy(ops, share),
        borrowed: (ops, share) => this.durations.borrowedEndedBy(ops, share),
        confirm: (projectId, ids) => this.operationsTracker(projectId).refresh(ids, { pollIntervalMs: 1 }),
      });
    }
    this.trackerOptions = {
      // An action never seen to finish is due when the known ones usually are.
      expectedDuration: (op) => this.durations.expected([op]) ?? this.durations.borrowedEndedBy([op], 0.5),
      observed: (operations, listedAt) => {
        for (const op of operations) this.durations.observe(op);
        const projectId = operations[0]?.projectId;
        if (projectId !== undefined) this.gate?.observe(projectId, operations, listedAt);
      },
      ...options.operations,
      ...(options.operationPolling === undefined ? {} : { polling: options.operationPolling }),
    };
    this.transport = new Transport({ ...options, baseUrl: this.baseUrl });
    const logger = (options.logger ?? pino({ enabled: false })).child(
      { component: "platform-client" },
      {
        redact: {
          paths: ["authorization", "headers.authorization", "apiKey", "key", "*.key", "*.apiKey"],
          censor: "[REDACTED]",
        },
      },
    );
    this.exchange = new Exchange({
      transport: this.transport,
      budget: this.budget,
      logger,
      metrics: options.metrics ?? noMetrics,
      apiKey: options.apiKey,
      retry: options.retry,
    });
    this.snapshots = new EndpointSnapshot((projectId) => this.listEndpoints(projectId), {
      windowMs: options.snapshotWindowMs,
    });
    this.branchSnapshots = new BranchSnapshot((projectId) => this.listBranches(projectId), {
      windowMs: options.snapshotWindowMs,
    });
  }

  private run<T>(call: RouteCall<T>): Promise<T> {
    return this.exchange.run(call);
  }

  /**
   * Runs an endpoint mutation when its project's turn comes (gate.ts) and keeps the project's
   * snapshot current: its answer is recorded there; a mutation that failed, or whose outcome is
   * unknown, makes the next reader list again. One the platform certainly did not apply (held
   * back, 423, 429) changes nothing there. An answer without a body (204 to a DELETE of an
   * endpoint already gone) removes the endpoint.
   */
  private async mutateEndpoint(
    projectId: string,
    endpointId: string | undefined,
    call: RouteCall<EndpointMutation | undefined>,
    options: MutationOptions,
    removes = false,
  ): Promise<EndpointMutation | undefined> {
    let result: EndpointMutation | undefined;
    try {
      const send = () => this.run({ ...call, signal: options.signal });
      result = this.gate
        ? await this.gate.run(projectId, send, (r) => r?.operations ?? [], options)
        : await send();
    } catch (err) {
      if (!notApplied(err)) this.snapshots.invalidate(projectId);
      throw err;
    }
    if (result) this.snapshots.record(projectId, result.endpoint, removes);
    else if (endpointId !== undefined) this.snapshots.remove(projectId, endpointId);
    return result;
  }

  /** A mutation that always answers with a body. */
  private async mutateEndpointWithAnswer(
    projectId: string,
    endpointId: string | undefined,
    call: RouteCall<EndpointMutation>,
    options: MutationOptions,
  ): Promise<EndpointMutation> {
    const result = await this.mutateEndpoint(projectId, endpointId, call, options);
    if (!result) throw new Error(`${call.method} ${call.template} answered without a body`);
    return result;
  }

  // -------------------------------------------------------------------------------------------
  // API keys

  /**
   * Creates a key. Its value is returned only here and never logged. If this throws
   * OutcomeUnknownError the key may exist with its value lost: list keys by name and revoke it.
   */
  createApiKey(name: string, options: CallOptions = {}): Promise<ApiKeyCreated> {
    return this.run({
      method: "POST",
      template: "/api_keys",
      path: "/api_keys",
      body: { key_name: name },
      schema: apiKeyCreatedWire,
      signal: options.signal,
    });
  }

  listApiKeys(options: CallOptions = {}): Promise<ApiKey[]> {
    return this.run({
      method: "GET",
      template: "/api_keys",
      path: "/api_keys",
      schema: apiKeysWire,
      signal: options.signal,
    });
  }

  revokeApiKey(keyId: number, options: CallOptions = {}): Promise<ApiKeyRevoked> {
    return this.run({
      method: "DELETE",
      template: "/api_keys/{key_id}",
      path: `/api_keys/${id(keyId)}`,
      schema: apiKeyRevokedWire,
      signal: options.signal,
    });
  }

  /** Who the key belongs to: the account (user or organization) whose limits it spends. */
  authDetails(options: CallOptions = {}): Promise<AuthDetails> {
    return this.run({
      method: "GET",
      template: "/auth",
      path: "/auth",
      schema: authDetailsWire,
      signal: options.signal,
    });
  }

  // -------------------------------------------------------------------------------------------
  // Projects

  /** Every project of the account, following the pages (the cursor is the last project id). */
  async listProjects(options: CallOptions & { pageSize?: number } = {}): Promise<Project[]> {
    const limit = options.pageSize ?? 400;
    const projects: Project[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.run({
        method: "GET",
        template: "/projects",
        path: "/projects",
        query: { limit, cursor },
        schema: projectsPageWire,
        signal: options.signal,
      });
      projects.push(...page.projects);
      const next = page.pagination?.cursor ?? page.projects.at(-1)?.id;
      if (page.projects.length < limit || next === undefined || next === cursor) return projects;
      cursor = next;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Compute endpoints

  createEndpoint(
    projectId: string,
    spec: EndpointCreateSpec,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    return this.mutateEndpointWithAnswer(
      projectId,
      undefined,
      {
        method: "POST",
        template: "/projects/{project_id}/endpoints",
        path: `/projects/${id(projectId)}/endpoints`,
        body: endpointBody(spec),
        schema: endpointMutationWire,
      },
      options,
    );
  }

  async listEndpoints(projectId: string, options: CallOptions = {}): Promise<Endpoint[]> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/endpoints",
      path: `/projects/${id(projectId)}/endpoints`,
      schema: endpointsResponseWire,
      signal: options.signal,
    });
    return response.endpoints;
  }

  /**
   * The project's endpoints, sharing one list request with other readers (single-flight) for as
   * long as they accept a list of that age (default `snapshotWindowMs`); kept current by this
   * client's own mutations.
   */
  snapshot(projectId: string, options: { maxAgeMs?: number } = {}): Promise<readonly Endpoint[]> {
    return this.snapshots.get(projectId, options.maxAgeMs);
  }

  async getEndpoint(projectId: string, endpointId: string, options: CallOptions = {}): Promise<Endpoint> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/endpoints/{endpoint_id}",
      path: `/projects/${id(projectId)}/endpoints/${id(endpointId)}`,
      schema: endpointResponseWire,
      signal: options.signal,
    });
    return response.endpoint;
  }

  updateEndpoint(
    projectId: string,
    endpointId: string,
    patch: EndpointPatch,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    return this.mutateEndpointWithAnswer(
      projectId,
      endpointId,
      {
        method: "PATCH",
        template: "/projects/{project_id}/endpoints/{endpoint_id}",
        path: `/projects/${id(projectId)}/endpoints/${id(endpointId)}`,
        body: endpointBody(patch),
        schema: endpointMutationWire,
      },
      options,
    );
  }

  /**
   * Deletes the endpoint. Undefined when the platform answered 204 without a body (an endpoint
   * already gone): the deletion is done all the same.
   */
  deleteEndpoint(
    projectId: string,
    endpointId: string,
    options: MutationOptions = {},
  ): Promise<EndpointMutation | undefined> {
    return this.mutateEndpoint(
      projectId,
      endpointId,
      {
        method: "DELETE",
        template: "/projects/{project_id}/endpoints/{endpoint_id}",
        path: `/projects/${id(projectId)}/endpoints/${id(endpointId)}`,
        schema: endpointMutationWire.optional(),
      },
      options,
      true,
    );
  }

  startEndpoint(
    projectId: string,
    endpointId: string,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    return this.endpointAction(projectId, endpointId, "start", options);
  }

  suspendEndpoint(
    projectId: string,
    endpointId: string,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    return this.endpointAction(projectId, endpointId, "suspend", options);
  }

  /** Suspend then start, in one platform call. */
  restartEndpoint(
    projectId: string,
    endpointId: string,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    return this.endpointAction(projectId, endpointId, "restart", options);
  }

  private endpointAction(
    projectId: string,
    endpointId: string,
    action: "start" | "suspend" | "restart",
    options: MutationOptions,
  ): Promise<EndpointMutation> {
    return this.mutateEndpointWithAnswer(
      projectId,
      endpointId,
      {
        method: "POST",
        template: `/projects/{project_id}/endpoints/{endpoint_id}/${action}`,
        path: `/projects/${id(projectId)}/endpoints/${id(endpointId)}/${action}`,
        schema: endpointMutationWire,
      },
      options,
    );
  }

  async listBranchEndpoints(
    projectId: string,
    branchId: string,
    options: CallOptions = {},
  ): Promise<Endpoint[]> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/branches/{branch_id}/endpoints",
      path: `/projects/${id(projectId)}/branches/${id(branchId)}/endpoints`,
      schema: endpointsResponseWire,
      signal: options.signal,
    });
    return response.endpoints;
  }

  // -------------------------------------------------------------------------------------------
  // Operations

  /** One page of the project's operations, newest first. */
  async listOperationsPage(
    projectId: string,
    page: { limit: number; cursor?: string | undefined },
    options: CallOptions = {},
  ): Promise<OperationsPage> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/operations",
      path: `/projects/${id(projectId)}/operations`,
      query: { limit: page.limit, cursor: page.cursor },
      schema: operationsPageWire,
      signal: options.signal,
    });
    return { operations: response.operations, cursor: response.pagination?.cursor };
  }

  /** Every operation of the project, newest first, page by page as the iteration goes. */
  async *listOperations(
    projectId: string,
    options: CallOptions & { limit?: number } = {},
  ): AsyncGenerator<Operation, void, undefined> {
    const limit = options.limit ?? 100;
    let cursor: string | undefined;
    for (;;) {
      const page = await this.listOperationsPage(projectId, { limit, cursor }, options);
      yield* page.operations;
      // The platform always sends a cursor, even on the last page: a short page is the end.
      if (page.operations.length < limit || page.cursor === undefined || page.cursor === cursor) return;
      cursor = page.cursor;
    }
  }

  async getOperation(projectId: string, operationId: string, options: CallOptions = {}): Promise<Operation> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/operations/{operation_id}",
      path: `/projects/${id(projectId)}/operations/${id(operationId)}`,
      schema: operationResponseWire,
      signal: options.signal,
    });
    return response.operation;
  }

  /** The project's tracker, which settles many pending operations with one list pass. */
  operationsTracker(projectId: string): OperationsTracker {
    let tracker = this.trackers.get(projectId);
    if (!tracker) {
      tracker = new OperationsTracker(this, projectId, {
        // Polling yields to changes waiting: the project's own for their turn (a project whose
        // changes are all sent looks as usual, so its last resources see Ready soon), or without
        // a gate any change waiting for the rate budget.
        busy: () => (this.gate ? this.gate.holding(projectId) : this.budget.busyWithMutations()),
        ...this.trackerOptions,
      });
      this.trackers.set(projectId, tracker);
    }
    return tracker;
  }

  /**
   * Reports whether operations finished, failed or are still running. By default it looks once
   * and returns; `running` carries `retryAfterMs` (the poll interval) for the caller's requeue.
   */
  async waitForOperations(
    projectId: string,
    operations: readonly (Operation | string)[],
    options: WaitOptions = {},
  ): Promise<OperationsOutcome> {
    const outcome = await waitForOperations(this.operationsTracker(projectId), operations, {
      pollIntervalMs: this.pollIntervalMs,
      ...options,
    });
    for (const op of outcome.operations) this.durations.observe(op);
    // What the snapshots show of the endpoints and branches they changed follows their outcome.
    if (outcome.state === "failed") {
      this.snapshots.invalidate(projectId);
      this.branchSnapshots.invalidate(projectId);
    }
    if (outcome.state === "finished") {
      const endpoints = new Set(outcome.operations.map((op) => op.endpointId));
      for (const endpointId of endpoints) if (endpointId) this.snapshots.settle(projectId, endpointId);
      // An operation on one of the branch's endpoints (start_compute, apply_config) leaves the
      // branch's state as it was: only the branch's own operations settle it.
      const branches = new Set(outcome.operations.filter((op) => !op.endpointId).map((op) => op.branchId));
      for (const branchId of branches) if (branchId) this.branchSnapshots.settle(projectId, branchId);
    }
    return outcome;
  }

  /**
   * How long a change's operations usually take, from the ones this client has seen finish;
   * undefined until it has seen each of their actions finish once.
   */
  expectedDuration(operations: readonly Pick<Operation, "action">[]): number | undefined {
    return this.durations.expected(operations);
  }

  /** Closes the keep-alive connections. */
  close(): Promise<void> {
    return this.transport.close();
  }

  // -------------------------------------------------------------------------------------------
  // Branches (mutations take the project's turn in the same gate as endpoint mutations: the
  // platform's lock is per project, and `create_branch` holds it)

  /**
   * Every branch of the project, following the pages (`pagination.next`; a page may hold fewer
   * than asked). Sorted by creation, oldest first: a branch changed while the pages are read
   * keeps its place (the default order, by `updated_at`, would move it to a page already read).
   */
  async listBranches(
    projectId: string,
    options: CallOptions & { pageSize?: number } = {},
  ): Promise<Branch[]> {
    const branches = new Map<string, Branch>();
    let cursor: string | undefined;
    for (;;) {
      const page = await this.run({
        method: "GET",
        template: "/projects/{project_id}/branches",
        path: `/projects/${id(projectId)}/branches`,
        query: { limit: options.pageSize ?? 100, sort_by: "created_at", sort_order: "asc", cursor },
        schema: branchesResponseWire,
        signal: options.signal,
      });
      for (const branch of page.branches) branches.set(branch.id, branch);
      const next = page.pagination?.next;
      if (next === undefined || next === cursor || page.branches.length === 0) return [...branches.values()];
      cursor = next;
    }
  }

  /**
   * The project's branches, sharing one list request with other readers (single-flight) for as
   * long as they accept a list of that age (default `snapshotWindowMs`); kept current by this
   * client's own branch mutations (create, update, delete, restore) and their operations.
   */
  branchSnapshot(projectId: string, options: { maxAgeMs?: number } = {}): Promise<readonly Branch[]> {
    return this.branchSnapshots.get(projectId, options.maxAgeMs);
  }

  async getBranch(projectId: string, branchId: string, options: CallOptions = {}): Promise<Branch> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/branches/{branch_id}",
      path: `/projects/${id(projectId)}/branches/${id(branchId)}`,
      schema: branchResponseWire,
      signal: options.signal,
    });
    return response.branch;
  }

  /**
   * Creates a branch from its parent (the default branch when none is named); the answer carries
   * the operations (`create_branch`) the branch is `init` until. If this throws
   * OutcomeUnknownError the branch may exist: find it again by its name.
   */
  createBranch(
    projectId: string,
    spec: BranchCreateSpec,
    options: MutationOptions = {},
  ): Promise<BranchMutation> {
    return this.mutateBranch(
      projectId,
      undefined,
      {
        method: "POST",
        template: "/projects/{project_id}/branches",
        path: `/projects/${id(projectId)}/branches`,
        body: branchBody(spec),
        schema: branchMutationWire,
      },
      options,
    ) as Promise<BranchMutation>;
  }

  /** Renames, protects or sets the expiry of a branch (metadata: usually no operation). */
  updateBranch(
    projectId: string,
    branchId: string,
    patch: BranchPatch,
    options: MutationOptions = {},
  ): Promise<BranchMutation> {
    return this.mutateBranch(
      projectId,
      branchId,
      {
        method: "PATCH",
        template: "/projects/{project_id}/branches/{branch_id}",
        path: `/projects/${id(projectId)}/branches/${id(branchId)}`,
        body: branchBody(patch),
        schema: branchMutationWire,
      },
      options,
    ) as Promise<BranchMutation>;
  }

  /**
   * Deletes a branch and its endpoints. Undefined when the platform answered 204 (the branch does
   * not exist or is already deleted): the deletion is done all the same.
   */
  deleteBranch(
    projectId: string,
    branchId: string,
    options: MutationOptions = {},
  ): Promise<BranchMutation | undefined> {
    return this.mutateBranch(
      projectId,
      branchId,
      {
        method: "DELETE",
        template: "/projects/{project_id}/branches/{branch_id}",
        path: `/projects/${id(projectId)}/branches/${id(branchId)}`,
        schema: branchMutationWire.optional(),
      },
      options,
    );
  }

  // -------------------------------------------------------------------------------------------
  // A branch's roles and databases, and its restore (mutations in the project's turn: they start
  // operations, `apply_config` on the branch's endpoints or the restore's own, under its lock)

  async listRoles(projectId: string, branchId: string, options: CallOptions = {}): Promise<Role[]> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/branches/{branch_id}/roles",
      path: `/projects/${id(projectId)}/branches/${id(branchId)}/roles`,
      schema: rolesResponseWire,
      signal: options.signal,
    });
    return response.roles;
  }

  /** Creates a role (the platform generates its password; the answer's copy is dropped). */
  createRole(
    projectId: string,
    branchId: string,
    name: string,
    options: MutationOptions = {},
  ): Promise<RoleMutation> {
    return this.mutateInProjectTurn(
      projectId,
      {
        method: "POST",
        template: "/projects/{project_id}/branches/{branch_id}/roles",
        path: `/projects/${id(projectId)}/branches/${id(branchId)}/roles`,
        body: roleBody(name),
        schema: roleMutationWire,
      },
      options,
    );
  }

  async listDatabases(projectId: string, branchId: string, options: CallOptions = {}): Promise<Database[]> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/branches/{branch_id}/databases",
      path: `/projects/${id(projectId)}/branches/${id(branchId)}/databases`,
      schema: databasesResponseWire,
      signal: options.signal,
    });
    return response.databases;
  }

  createDatabase(
    projectId: string,
    branchId: string,
    spec: DatabaseCreateSpec,
    options: MutationOptions = {},
  ): Promise<DatabaseMutation> {
    return this.mutateInProjectTurn(
      projectId,
      {
        method: "POST",
        template: "/projects/{project_id}/branches/{branch_id}/databases",
        path: `/projects/${id(projectId)}/branches/${id(branchId)}/databases`,
        body: databaseBody(spec),
        schema: databaseMutationWire,
      },
      options,
    );
  }

  /**
   * Restores a branch from another branch's head: with its parent as source, a reset from the
   * parent. The answer carries the restore's operations; the branch's endpoints restart with it.
   */
  async restoreBranch(
    projectId: string,
    branchId: string,
    spec: BranchRestoreSpec,
    options: MutationOptions = {},
  ): Promise<BranchRestore> {
    let result: BranchRestore;
    try {
      result = await this.mutateInProjectTurn(
        projectId,
        {
          method: "POST",
          template: "/projects/{project_id}/branches/{branch_id}/restore",
          path: `/projects/${id(projectId)}/branches/${id(branchId)}/restore`,
          body: restoreBody(spec),
          schema: branchRestoreWire,
        },
        options,
      );
    } catch (err) {
      if (!notApplied(err)) this.branchSnapshots.invalidate(projectId);
      throw err;
    }
    // The branch as the answer shows it: its operations settle it (branch-level ones).
    this.branchSnapshots.record(projectId, result.branch);
    return result;
  }

  /**
   * A mutation of what a branch holds, in the project's turn. Its operations touch the branch's
   * endpoints (an `apply_config` wakes a suspended one): the next reader of the project lists
   * them again.
   */
  private async mutateInProjectTurn<T extends { operations: Operation[] }>(
    projectId: string,
    call: RouteCall<T>,
    options: MutationOptions,
  ): Promise<T> {
    const send = () => this.run({ ...call, signal: options.signal });
    try {
      return this.gate ? await this.gate.run(projectId, send, (r) => r.operations, options) : await send();
    } finally {
      this.snapshots.invalidate(projectId);
    }
  }

  /**
   * A branch mutation in the project's turn. Its answer is recorded in the project's branch
   * snapshot (a 204 to a DELETE removes the branch); a mutation that failed, or whose outcome is
   * unknown, makes the next reader list the branches again, as with endpoints (`mutateEndpoint`).
   * Endpoints it creates or removes (a deleted branch's) are not in the endpoint snapshot's view:
   * the next reader of the project lists them again.
   */
  private async mutateBranch(
    projectId: string,
    branchId: string | undefined,
    call: RouteCall<BranchMutation | undefined>,
    options: MutationOptions,
  ): Promise<BranchMutation | undefined> {
    const send = () => this.run({ ...call, signal: options.signal });
    let result: BranchMutation | undefined;
    try {
      result = this.gate
        ? await this.gate.run(projectId, send, (r) => r?.operations ?? [], options)
        : await send();
    } catch (err) {
      if (!notApplied(err)) {
        this.branchSnapshots.invalidate(projectId);
        if (call.method !== "PATCH") this.snapshots.invalidate(projectId);
      }
      throw err;
    }
    if (call.method === "DELETE" || (result?.endpoints.length ?? 0) > 0) this.snapshots.invalidate(projectId);
    if (result) this.branchSnapshots.record(projectId, result.branch, call.method === "DELETE");
    else if (branchId !== undefined) this.branchSnapshots.remove(projectId, branchId);
    return result;
  }

  // -------------------------------------------------------------------------------------------
  // Role passwords and connection URIs (a password reset takes the project's turn in the mutation
  // gate: it starts operations, and the new password is valid once they finish)

  /**
   * The role's current password. PasswordNotStoredError when the project does not store
   * passwords (412): only a reset gives one then. Never logged.
   */
  async revealPassword(
    projectId: string,
    branchId: string,
    roleName: string,
    options: CallOptions = {},
  ): Promise<string> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/branches/{branch_id}/roles/{role_name}/reveal_password",
      path: `/projects/${id(projectId)}/branches/${id(branchId)}/roles/${id(roleName)}/reveal_password`,
      schema: rolePasswordWire,
      signal: options.signal,
    }).catch(passwordNotStored(projectId));
    return response.password;
  }

  /**
   * Gives the role a new password, valid once the answer's operations finish (the old one until
   * then); the role's connections are dropped. If this throws OutcomeUnknownError the password may
   * have changed with the new one lost: reveal it, or reset again.
   */
  async resetPassword(
    projectId: string,
    branchId: string,
    roleName: string,
    options: MutationOptions = {},
  ): Promise<PasswordReset> {
    const send = () =>
      this.run({
        method: "POST",
        template: "/projects/{project_id}/branches/{branch_id}/roles/{role_name}/reset_password",
        path: `/projects/${id(projectId)}/branches/${id(branchId)}/roles/${id(roleName)}/reset_password`,
        schema: passwordResetWire,
        signal: options.signal,
      });
    return this.gate ? this.gate.run(projectId, send, (r) => r.operations, options) : send();
  }

  /**
   * A connection URI the platform builds for a role and database, with the role's password:
   * PasswordNotStoredError (412) when the project does not store passwords.
   */
  async connectionUri(
    projectId: string,
    query: ConnectionUriQuery,
    options: CallOptions = {},
  ): Promise<string> {
    const response = await this.run({
      method: "GET",
      template: "/projects/{project_id}/connection_uri",
      path: `/projects/${id(projectId)}/connection_uri`,
      query: {
        branch_id: query.branchId,
        endpoint_id: query.endpointId,
        database_name: query.databaseName,
        role_name: query.roleName,
        pooled: query.pooled === undefined ? undefined : String(query.pooled),
      },
      schema: connectionUriWire,
      signal: options.signal,
    }).catch(passwordNotStored(projectId));
    return response.uri;
  }
}

/** A failure after which the platform certainly did not apply the change: held back, 423, 429. */
function notApplied(err: unknown): boolean {
  return err instanceof ProjectBusyError || err instanceof LockedError || err instanceof RateLimitedError;
}

/** A 412 to a password read: the project does not store passwords. */
function passwordNotStored(projectId: string): (err: unknown) => never {
  return (err) => {
    if (err instanceof PlatformError && err.status === 412) {
      throw new PasswordNotStoredError(
        `project ${projectId} does not store role passwords (${err.message})`,
        {
          route: err.route,
          status: 412,
          code: err.code,
          requestId: err.requestId,
        },
      );
    }
    throw err;
  };
}
