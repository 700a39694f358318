/**
 * The operator's door to the platform for one API key: one typed method per route it uses
 * (routes.ts holds each route once). Methods speak camelCase; the platform's snake_case stays in
 * the schemas. Budget, retries, errors and observability live in exchange.ts. What the platform
 * keeps per account and per project (the budget, learned durations, the mutation gate, the lists
 * and operations of a project) lives in the key's account (account.ts, project.ts), shared with
 * the clients of the account's other keys.
 */
import pino, { type Logger } from "pino";
import type { z } from "zod";
import type { OrgApiKey, OrgApiKeyCreated, OrgApiKeyRevoked, ProjectPermission } from "./access-schemas.ts";
import { Account, type AccountOptions } from "./account.ts";
import type { RateBudget } from "./budget.ts";
import { Exchange, type RetryOptions } from "./exchange.ts";
import { noMetrics, type PlatformMetrics } from "./metrics.ts";
import {
  type OperationsOutcome,
  type OperationsPage,
  type OperationsSource,
  waitForOperations,
  type WaitOptions,
} from "./operations.ts";
import type { Project } from "./project.ts";
import { changesProject, type ChangeAnswer, type Ids, pathOf, type Route, routes } from "./routes.ts";
import {
  type ApiKey,
  type ApiKeyCreated,
  type ApiKeyRevoked,
  type AuthDetails,
  type Endpoint,
  endpointBody,
  type EndpointCreateSpec,
  type EndpointMutation,
  type EndpointPatch,
  type Operation,
} from "./schemas.ts";
import {
  type Branch,
  branchBody,
  type BranchCreateSpec,
  type BranchMutation,
  type BranchPatch,
} from "./branch-schemas.ts";
import {
  type Project as PlatformProject,
  projectBody,
  type ProjectCreated,
  type ProjectCreateSpec,
  type ProjectMutation,
  type ProjectPatch,
  type ProjectsQuery,
  type projectsPageWire,
} from "./project-schemas.ts";
import type { ConnectionUriQuery, PasswordReset } from "./role-schemas.ts";
import {
  type BranchRestore,
  type BranchRestoreSpec,
  type Database,
  databaseBody,
  type DatabaseCreateSpec,
  type DatabaseMutation,
  restoreBody,
  type Role,
  roleBody,
  type RoleMutation,
} from "./branch-content-schemas.ts";
import {
  anonymizedBranchBody,
  type AnonymizedBranchSpec,
  type AnonymizedStatus,
  type MaskingRule,
  maskingRulesBody,
} from "./anonymized-schemas.ts";
import {
  type BackupScheduleItem,
  backupScheduleBody,
  type Snapshot,
  type SnapshotCreated,
  type SnapshotCreateSpec,
  type SnapshotPatch,
  snapshotPatchBody,
  snapshotQuery,
  type SnapshotRestoreSpec,
  snapshotRestoreBody,
} from "./snapshot-schemas.ts";
import { BadRequestError, PasswordNotStoredError, PlatformError, keyRefused, notApplied } from "./errors.ts";
import { Transport, type TransportRequest, type TransportTimeouts } from "./transport.ts";

export const DEFAULT_BASE_URL = "https://console.neon.tech/api/v2";

export interface PlatformClientOptions extends TransportTimeouts, AccountOptions {
  /** Ends with /api/v2. Default: the platform's public URL. */
  baseUrl?: string;
  apiKey: string;
  /**
   * The key's account, shared with the clients of its other keys (accounts.ts). Default: an
   * account of this key alone, made from the account options (`budget`, `limits`, …).
   */
  account?: Account;
  logger?: Logger;
  metrics?: PlatformMetrics;
  retry?: RetryOptions;
  /** Interval between looks at running operations. Default 5 s (the platform's recommendation). */
  pollIntervalMs?: number;
  /** Maximum sockets kept open to the platform. Default 32. */
  connections?: number;
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
  /** Brings the ticket's caller back (its resource reconciled again) when its turn comes sooner than it was told. */
  wake?: () => void;
}

/** What a call sends besides the path: the query and the body. */
type Request = Pick<TransportRequest, "query" | "body"> & { signal?: AbortSignal | undefined };

export class PlatformClient implements OperationsSource {
  readonly baseUrl: string;
  readonly pollIntervalMs: number;
  private current: Account;
  private readonly transport: Transport;
  private readonly exchange: Exchange;

  constructor(options: PlatformClientOptions) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.pollIntervalMs = options.pollIntervalMs ?? 5_000;
    this.current = options.account ?? new Account(options);
    this.current.add(this);
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
      budget: () => this.current.budget,
      logger,
      metrics: options.metrics ?? noMetrics,
      apiKey: options.apiKey,
      retry: options.retry,
    });
  }

  /** The account of the key: its budget, durations and projects. */
  get account(): Account {
    return this.current;
  }

  /** The account's request budget. */
  get budget(): RateBudget {
    return this.current.budget;
  }

  /**
   * The key turned out to belong to `account` (met first through another key): the client acts in
   * it from now on, and leaves the account it had on its own.
   */
  joinAccount(account: Account): void {
    if (account === this.current) return;
    this.current.remove(this);
    this.current = account;
    account.add(this);
  }

  /** A project as the key's account keeps it (shared with the account's other keys). */
  project(projectId: string): Project {
    return this.current.project(projectId);
  }

  /** One call of a route. */
  private call<P extends string, T>(route: Route<P, T>, ids: Ids<P>, request: Request = {}): Promise<T> {
    return this.exchange.run({
      ...request,
      method: route.method,
      template: route.path,
      path: pathOf(route.path, ids),
      schema: route.schema,
    });
  }

  /**
   * A change of a project: sent in the project's turn, and what it did told to the project's
   * state (project.ts).
   */
  private change<P extends string, T extends ChangeAnswer>(
    route: Route<P, T>,
    ids: Ids<P> & { project_id: string },
    options: MutationOptions,
    body?: unknown,
    query?: Request["query"],
  ): Promise<T> {
    if (!changesProject(route)) throw new Error(`${route.method} ${route.path} is not a change of a project`);
    const send = () => this.call(route, ids, { body, query, signal: options.signal });
    return this.project(ids.project_id).change(route, ids, send, { ...options, source: this });
  }

  // -------------------------------------------------------------------------------------------
  // The account: who a key is, and its keys

  /** Who the key belongs to: the account (user or organization) whose limits it spends. */
  authDetails(options: CallOptions = {}): Promise<AuthDetails> {
    return this.call(routes.authDetails, {}, options);
  }

  /**
   * Creates a key. Its value is returned only here and never logged. If this throws
   * OutcomeUnknownError the key may exist with its value lost: list keys by name and revoke it.
   */
  createApiKey(name: string, options: CallOptions = {}): Promise<ApiKeyCreated> {
    return this.call(routes.createApiKey, {}, { ...options, body: { key_name: name } });
  }

  listApiKeys(options: CallOptions = {}): Promise<ApiKey[]> {
    return this.call(routes.listApiKeys, {}, options);
  }

  revokeApiKey(keyId: number, options: CallOptions = {}): Promise<ApiKeyRevoked> {
    return this.call(routes.revokeApiKey, { key_id: keyId }, options);
  }

  // -------------------------------------------------------------------------------------------
  // Projects

  /**
   * The account's projects that match `query`, following the pages (400 a page, the most the
   * platform gives; the cursor is the last id of a page). A key of a user in an organization names
   * it (`orgId`), as it does to create one.
   */
  listProjects(query: ProjectsQuery = {}, options: CallOptions = {}): Promise<PlatformProject[]> {
    return this.everyProject(routes.listProjects, { search: query.search, org_id: query.orgId }, options);
  }

  /** Every page of a project list, each the platform's largest (400), following the id cursor. */
  private async everyProject(
    route: Route<"/projects" | "/projects/shared", z.output<typeof projectsPageWire>>,
    query: Record<string, string | undefined>,
    options: CallOptions,
  ): Promise<PlatformProject[]> {
    const projects: PlatformProject[] = [];
    const limit = 400;
    let cursor: string | undefined;
    for (;;) {
      const page = await this.call(route, {}, { query: { ...query, limit, cursor }, signal: options.signal });
      projects.push(...page.projects);
      const next = page.pagination?.cursor;
      if (page.projects.length < limit || next === undefined || next === cursor) return projects;
      cursor = next;
    }
  }

  /**
   * The account's projects (of `orgId`, where the key's user names an organization) from one list
   * shared by every key of the account, no older than `maxAgeMs`; this operator's own creates and
   * deletes are shown as they are answered.
   */
  accountProjects(
    query: { orgId?: string | undefined },
    options: CallOptions & { maxAgeMs: number },
  ): Promise<readonly PlatformProject[]> {
    const list = () => this.listProjects(query.orgId === undefined ? {} : { orgId: query.orgId }, options);
    return this.account.projectList.get(query.orgId, list, this, options.maxAgeMs);
  }

  /**
   * Creates a project with its default branch, role, database and read-write endpoint; the
   * answer carries the operations (`create_timeline`, `start_compute`) they are ready after. Not
   * a change of an existing project, so it takes no project's turn. If this throws
   * OutcomeUnknownError the project may exist: find it again by its name (and the owner mark
   * its default branch carries), never create it twice.
   */
  async createProject(spec: ProjectCreateSpec, options: CallOptions = {}): Promise<ProjectCreated> {
    const { connectionUris, ...created } = await this.call(
      routes.createProject,
      {},
      { body: projectBody(spec), signal: options.signal },
    );
    this.project(created.project.id).created(created, connectionUris);
    this.account.projectList.created(created.project);
    return created;
  }

  async getProject(projectId: string, options: CallOptions = {}): Promise<PlatformProject> {
    const { project } = await this.call(routes.getProject, { project_id: projectId }, options);
    this.project(projectId).show(project);
    return project;
  }

  /**
   * The project as the platform last showed it (a read, or its create's or a change's answer),
   * when that is no older than `maxAgeMs`; else read again. Changes this operator makes are
   * recorded as they are answered, so only changes made elsewhere wait for `maxAgeMs`.
   */
  async projectSnapshot(
    projectId: string,
    options: CallOptions & { maxAgeMs: number; orgId?: string | undefined },
  ): Promise<PlatformProject> {
    const shown = this.project(projectId).shownWithin(options.maxAgeMs);
    if (shown) return shown;
    // Many of the account's projects are looked at (thousands of Projects at their resync): one
    // list of them all serves every one. A list item without a retention (the document makes it
    // optional there) is read alone, so no field it leaves out reads as a drift.
    // A list the key may not make (a user of organizations must name one) is no answer either.
    if (this.account.projectList.worthListing(projectId, options.maxAgeMs)) {
      const projects = await this.accountProjects({ orgId: options.orgId }, options).catch((err: unknown) => {
        if (err instanceof BadRequestError || keyRefused(err)) return [];
        throw err;
      });
      const listed = projects.find((p) => p.id === projectId);
      if (listed?.historyRetentionSeconds !== undefined) return listed;
    }
    return this.getProject(projectId, options);
  }

  /** Changes the name, settings, default endpoint settings or history retention of a project. */
  async updateProject(
    projectId: string,
    patch: ProjectPatch,
    options: MutationOptions = {},
  ): Promise<ProjectMutation> {
    const state = this.project(projectId);
    try {
      const answer = await this.change(
        routes.updateProject,
        { project_id: projectId },
        options,
        projectBody(patch),
      );
      state.show(answer.project);
      return answer;
    } catch (err) {
      if (!notApplied(err)) state.unshow();
      throw err;
    }
  }

  /** Deletes a project and everything in it (recoverable for 7 days, platform-facts.md). */
  async deleteProject(projectId: string, options: MutationOptions = {}): Promise<ProjectMutation> {
    this.project(projectId).unshow();
    const answer = await this.change(routes.deleteProject, { project_id: projectId }, options);
    this.account.projectList.deleted(projectId);
    return answer;
  }

  // -------------------------------------------------------------------------------------------
  // Who a project is shared with (no turn in the project's gate: nothing runs on the platform)

  /** The e-mail addresses the project is shared with. */
  listProjectPermissions(projectId: string, options: CallOptions = {}): Promise<ProjectPermission[]> {
    return this.call(routes.listProjectPermissions, { project_id: projectId }, options);
  }

  /**
   * Shares the project with the user of an e-mail address (a collaborator: works in it, does not
   * delete it). A second grant to the same address is refused (a ConflictError on the emulator):
   * list first.
   */
  grantProjectPermission(
    projectId: string,
    email: string,
    options: CallOptions = {},
  ): Promise<ProjectPermission> {
    return this.call(
      routes.grantProjectPermission,
      { project_id: projectId },
      { ...options, body: { email } },
    );
  }

  /** Takes a grant back: the user's keys lose the project at once. */
  revokeProjectPermission(
    projectId: string,
    permissionId: string,
    options: CallOptions = {},
  ): Promise<ProjectPermission> {
    const ids = { project_id: projectId, permission_id: permissionId };
    return this.call(routes.revokeProjectPermission, ids, options);
  }

  /** The projects other users shared with the key's user, every page (none for an organization's key). */
  listSharedProjects(query: { search?: string } = {}, options: CallOptions = {}): Promise<PlatformProject[]> {
    return this.everyProject(routes.listSharedProjects, { search: query.search }, options);
  }

  // -------------------------------------------------------------------------------------------
  // An organization's keys (made with a personal key of an organization admin)

  /** The organization's keys, each with the one project it may reach, if scoped. */
  listOrgApiKeys(orgId: string, options: CallOptions = {}): Promise<OrgApiKey[]> {
    return this.call(routes.listOrgApiKeys, { org_id: orgId }, options);
  }

  /**
   * Creates a key of the organization, scoped to `projectId` when given: that project only, with a
   * member's rights. Its value is returned only here and never logged. If this throws
   * OutcomeUnknownError the key may exist with its value lost: list the organization's keys by
   * name and revoke it.
   */
  createOrgApiKey(
    orgId: string,
    name: string,
    scope: { projectId?: string } = {},
    options: CallOptions = {},
  ): Promise<OrgApiKeyCreated> {
    const body = {
      key_name: name,
      ...(scope.projectId === undefined ? {} : { project_id: scope.projectId }),
    };
    return this.call(routes.createOrgApiKey, { org_id: orgId }, { ...options, body });
  }

  revokeOrgApiKey(orgId: string, keyId: number, options: CallOptions = {}): Promise<OrgApiKeyRevoked> {
    return this.call(routes.revokeOrgApiKey, { org_id: orgId, key_id: keyId }, options);
  }

  // -------------------------------------------------------------------------------------------
  // Compute endpoints

  async listEndpoints(projectId: string, options: CallOptions = {}): Promise<Endpoint[]> {
    return (await this.call(routes.listEndpoints, { project_id: projectId }, options)).endpoints;
  }

  /**
   * The project's endpoints, sharing one list request with other readers (single-flight), of
   * every key of the account, for as long as they accept a list of that age (default
   * `snapshotWindowMs`); kept current by the project's changes.
   */
  snapshot(projectId: string, options: { maxAgeMs?: number } = {}): Promise<readonly Endpoint[]> {
    return this.project(projectId).endpoints.get(() => this.listEndpoints(projectId), this, options.maxAgeMs);
  }

  async getEndpoint(projectId: string, endpointId: string, options: CallOptions = {}): Promise<Endpoint> {
    const ids = { project_id: projectId, endpoint_id: endpointId };
    return (await this.call(routes.getEndpoint, ids, options)).endpoint;
  }

  createEndpoint(
    projectId: string,
    spec: EndpointCreateSpec,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    return this.change(routes.createEndpoint, { project_id: projectId }, options, endpointBody(spec));
  }

  updateEndpoint(
    projectId: string,
    endpointId: string,
    patch: EndpointPatch,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    const ids = { project_id: projectId, endpoint_id: endpointId };
    return this.change(routes.updateEndpoint, ids, options, endpointBody(patch));
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
    return this.change(routes.deleteEndpoint, { project_id: projectId, endpoint_id: endpointId }, options);
  }

  startEndpoint(
    projectId: string,
    endpointId: string,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    return this.change(routes.startEndpoint, { project_id: projectId, endpoint_id: endpointId }, options);
  }

  suspendEndpoint(
    projectId: string,
    endpointId: string,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    return this.change(routes.suspendEndpoint, { project_id: projectId, endpoint_id: endpointId }, options);
  }

  /** Suspend then start, in one platform call. */
  restartEndpoint(
    projectId: string,
    endpointId: string,
    options: MutationOptions = {},
  ): Promise<EndpointMutation> {
    return this.change(routes.restartEndpoint, { project_id: projectId, endpoint_id: endpointId }, options);
  }

  // -------------------------------------------------------------------------------------------
  // Operations

  /** One page of the project's operations, newest first. */
  async listOperationsPage(
    projectId: string,
    page: { limit: number; cursor?: string | undefined },
    options: CallOptions = {},
  ): Promise<OperationsPage> {
    const query = { limit: page.limit, cursor: page.cursor };
    const response = await this.call(routes.listOperations, { project_id: projectId }, { ...options, query });
    return { operations: response.operations, cursor: response.pagination?.cursor };
  }

  async getOperation(projectId: string, operationId: string, options: CallOptions = {}): Promise<Operation> {
    const ids = { project_id: projectId, operation_id: operationId };
    return (await this.call(routes.getOperation, ids, options)).operation;
  }

  /**
   * Reports whether operations finished, failed or are still running, looking with the project's
   * one tracker (shared by the account's keys). By default it looks once and returns; `running`
   * carries `retryAfterMs` (the poll interval) for the caller's requeue.
   */
  async waitForOperations(
    projectId: string,
    operations: readonly (Operation | string)[],
    options: WaitOptions = {},
  ): Promise<OperationsOutcome> {
    const project = this.project(projectId);
    const outcome = await waitForOperations(project.operations, operations, {
      pollIntervalMs: this.pollIntervalMs,
      ...options,
      source: this,
    });
    project.settle(outcome);
    return outcome;
  }

  /**
   * How long a change's operations usually take, from the ones the account has seen finish;
   * undefined until it has seen each of their actions finish once.
   */
  expectedDuration(operations: readonly Pick<Operation, "action">[]): number | undefined {
    return this.current.durations.expected(operations);
  }

  /** Closes the keep-alive connections; the client leaves its account. */
  close(): Promise<void> {
    this.current.remove(this);
    return this.transport.close();
  }

  // -------------------------------------------------------------------------------------------
  // Branches (changes take the project's turn: the platform's lock is per project, and
  // `create_branch` holds it)

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
      const query = { limit: options.pageSize ?? 100, sort_by: "created_at", sort_order: "asc", cursor };
      const page = await this.call(
        routes.listBranches,
        { project_id: projectId },
        { query, signal: options.signal },
      );
      for (const branch of page.branches) {
        branches.set(branch.id, { ...branch, annotations: page.annotations?.[branch.id]?.value });
      }
      const next = page.pagination?.next;
      if (next === undefined || next === cursor || page.branches.length === 0) return [...branches.values()];
      cursor = next;
    }
  }

  /**
   * The project's branches, sharing one list request with other readers (single-flight), of
   * every key of the account, for as long as they accept a list of that age (default
   * `snapshotWindowMs`); kept current by the project's branch changes and their operations.
   */
  branchSnapshot(projectId: string, options: { maxAgeMs?: number } = {}): Promise<readonly Branch[]> {
    return this.project(projectId).branches.get(() => this.listBranches(projectId), this, options.maxAgeMs);
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
    return this.change(routes.createBranch, { project_id: projectId }, options, branchBody(spec));
  }

  /** Renames, protects or sets the expiry of a branch (metadata: usually no operation). */
  updateBranch(
    projectId: string,
    branchId: string,
    patch: BranchPatch,
    options: MutationOptions = {},
  ): Promise<BranchMutation> {
    const ids = { project_id: projectId, branch_id: branchId };
    return this.change(routes.updateBranch, ids, options, branchBody(patch));
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
    return this.change(routes.deleteBranch, { project_id: projectId, branch_id: branchId }, options);
  }

  /**
   * Restores a branch from another branch's head: with its parent as source, a reset from the
   * parent. The answer carries the restore's operations; the branch's endpoints restart with it.
   */
  restoreBranch(
    projectId: string,
    branchId: string,
    spec: BranchRestoreSpec,
    options: MutationOptions = {},
  ): Promise<BranchRestore> {
    const ids = { project_id: projectId, branch_id: branchId };
    return this.change(routes.restoreBranch, ids, options, restoreBody(spec));
  }

  // -------------------------------------------------------------------------------------------
  // Anonymized branches (changes in the project's turn; a rules change or a run starts no
  // operation: the run's state is `anonymizedStatus`)

  /**
   * Creates a branch of the parent whose data the platform masks by `maskingRules` (with
   * `startAnonymization`, as soon as the branch is ready). The answer is a branch create's:
   * `create_branch` and the read-write endpoint's `start_compute`.
   */
  createAnonymizedBranch(
    projectId: string,
    spec: AnonymizedBranchSpec,
    options: MutationOptions = {},
  ): Promise<BranchMutation> {
    return this.change(
      routes.createAnonymizedBranch,
      { project_id: projectId },
      options,
      anonymizedBranchBody(spec),
    );
  }

  async getMaskingRules(
    projectId: string,
    branchId: string,
    options: CallOptions = {},
  ): Promise<MaskingRule[]> {
    const ids = { project_id: projectId, branch_id: branchId };
    return (await this.call(routes.getMaskingRules, ids, options)).masking_rules;
  }

  /** Replaces every masking rule of the branch; they run at the next `anonymize`. */
  async updateMaskingRules(
    projectId: string,
    branchId: string,
    rules: readonly MaskingRule[],
    options: MutationOptions = {},
  ): Promise<MaskingRule[]> {
    const ids = { project_id: projectId, branch_id: branchId };
    return (await this.change(routes.updateMaskingRules, ids, options, maskingRulesBody(rules))).maskingRules;
  }

  /** Starts a run of the branch's rules over its current data; answers the state it starts in. */
  async anonymize(
    projectId: string,
    branchId: string,
    options: MutationOptions = {},
  ): Promise<AnonymizedStatus> {
    const ids = { project_id: projectId, branch_id: branchId };
    return (await this.change(routes.anonymize, ids, options)).status;
  }

  anonymizedStatus(
    projectId: string,
    branchId: string,
    options: CallOptions = {},
  ): Promise<AnonymizedStatus> {
    return this.call(routes.anonymizedStatus, { project_id: projectId, branch_id: branchId }, options);
  }

  // -------------------------------------------------------------------------------------------
  // Snapshots and backup schedules (changes in the project's turn)

  /** Takes a snapshot of a root branch, now or at a point of its restore window. */
  createSnapshot(
    projectId: string,
    branchId: string,
    spec: SnapshotCreateSpec = {},
    options: MutationOptions = {},
  ): Promise<SnapshotCreated> {
    const ids = { project_id: projectId, branch_id: branchId };
    return this.change(routes.createSnapshot, ids, options, undefined, snapshotQuery(spec));
  }

  async listSnapshots(projectId: string, options: CallOptions = {}): Promise<Snapshot[]> {
    return (await this.call(routes.listSnapshots, { project_id: projectId }, options)).snapshots;
  }

  /** Renames a snapshot or changes its expiry (`expiresAt: null` removes it). */
  async updateSnapshot(
    projectId: string,
    snapshotId: string,
    patch: SnapshotPatch,
    options: MutationOptions = {},
  ): Promise<Snapshot> {
    const ids = { project_id: projectId, snapshot_id: snapshotId };
    return (await this.change(routes.updateSnapshot, ids, options, snapshotPatchBody(patch))).snapshot;
  }

  /** Deletes a snapshot; the answer carries the operation that removes its data. */
  deleteSnapshot(
    projectId: string,
    snapshotId: string,
    options: MutationOptions = {},
  ): Promise<{ operations: Operation[] }> {
    return this.change(routes.deleteSnapshot, { project_id: projectId, snapshot_id: snapshotId }, options);
  }

  /**
   * Restores a snapshot as a new branch (`create_branch`). With `finalizeRestore` it takes the
   * target's place at once: its name and endpoints (the answer's), the target renamed
   * `<name> (old)`. If this throws OutcomeUnknownError the branch may exist: list the branches
   * for one `restoredFrom` the snapshot.
   */
  restoreSnapshot(
    projectId: string,
    snapshotId: string,
    spec: SnapshotRestoreSpec = {},
    options: MutationOptions = {},
  ): Promise<BranchMutation> {
    const ids = { project_id: projectId, snapshot_id: snapshotId };
    return this.change(routes.restoreSnapshot, ids, options, snapshotRestoreBody(spec));
  }

  /**
   * Puts a branch a snapshot's restore made in the place of the branch it replaces, which is
   * renamed (`name`, else `<name> (old)`); that branch's endpoints move and restart.
   */
  finalizeRestore(
    projectId: string,
    branchId: string,
    spec: { name?: string } = {},
    options: MutationOptions = {},
  ): Promise<{ operations: Operation[] }> {
    const ids = { project_id: projectId, branch_id: branchId };
    return this.change(
      routes.finalizeRestore,
      ids,
      options,
      spec.name === undefined ? {} : { name: spec.name },
    );
  }

  async getBackupSchedule(
    projectId: string,
    branchId: string,
    options: CallOptions = {},
  ): Promise<BackupScheduleItem[]> {
    const ids = { project_id: projectId, branch_id: branchId };
    return (await this.call(routes.getBackupSchedule, ids, options)).schedule;
  }

  /** Replaces the branch's backup schedule (root branches, paid plans). */
  async setBackupSchedule(
    projectId: string,
    branchId: string,
    schedule: readonly BackupScheduleItem[],
    options: MutationOptions = {},
  ): Promise<void> {
    const ids = { project_id: projectId, branch_id: branchId };
    await this.change(routes.setBackupSchedule, ids, options, backupScheduleBody(schedule));
  }

  // -------------------------------------------------------------------------------------------
  // A branch's roles and databases (changes in the project's turn: they start `apply_config` on
  // the branch's endpoints, under its lock)

  async listRoles(projectId: string, branchId: string, options: CallOptions = {}): Promise<Role[]> {
    const ids = { project_id: projectId, branch_id: branchId };
    return (await this.call(routes.listRoles, ids, options)).roles;
  }

  /** Creates a role (the platform generates its password; the answer's copy is dropped). */
  createRole(
    projectId: string,
    branchId: string,
    name: string,
    options: MutationOptions = {},
  ): Promise<RoleMutation> {
    return this.change(
      routes.createRole,
      { project_id: projectId, branch_id: branchId },
      options,
      roleBody(name),
    );
  }

  async listDatabases(projectId: string, branchId: string, options: CallOptions = {}): Promise<Database[]> {
    const ids = { project_id: projectId, branch_id: branchId };
    return (await this.call(routes.listDatabases, ids, options)).databases;
  }

  createDatabase(
    projectId: string,
    branchId: string,
    spec: DatabaseCreateSpec,
    options: MutationOptions = {},
  ): Promise<DatabaseMutation> {
    const ids = { project_id: projectId, branch_id: branchId };
    return this.change(routes.createDatabase, ids, options, databaseBody(spec));
  }

  // -------------------------------------------------------------------------------------------
  // Role passwords and connection URIs (a reset takes the project's turn: it starts operations,
  // and the new password is valid once they finish)

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
    const ids = { project_id: projectId, branch_id: branchId, role_name: roleName };
    const response = await this.call(routes.revealPassword, ids, options).catch(passwordNotStored(projectId));
    return response.password;
  }

  /**
   * Gives the role a new password, valid once the answer's operations finish (the old one until
   * then); the role's connections are dropped. If this throws OutcomeUnknownError the password may
   * have changed with the new one lost: reveal it, or reset again.
   */
  resetPassword(
    projectId: string,
    branchId: string,
    roleName: string,
    options: MutationOptions = {},
  ): Promise<PasswordReset> {
    const ids = { project_id: projectId, branch_id: branchId, role_name: roleName };
    return this.change(routes.resetPassword, ids, options);
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
    // A new project's owner role: its create answered the URI (the direct one) already.
    const held = query.pooled ? undefined : this.project(projectId).takeCreatedUri(query);
    if (held !== undefined) return held;
    const wire = {
      branch_id: query.branchId,
      endpoint_id: query.endpointId,
      database_name: query.databaseName,
      role_name: query.roleName,
      pooled: query.pooled === undefined ? undefined : String(query.pooled),
    };
    const response = await this.call(
      routes.connectionUri,
      { project_id: projectId },
      { ...options, query: wire },
    ).catch(passwordNotStored(projectId));
    return response.uri;
  }
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
