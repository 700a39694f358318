// The platform API's routes under /api/v2: each turns a request into a change
// of the world and the response the platform would give.
import type { HTTPMethod } from "find-my-way";
import { createApiKey, listApiKeys, revokeApiKey } from "./api-keys.ts";
import {
  createEndpoint,
  deleteEndpoint,
  findEndpoint,
  findProject,
  restartEndpoint,
  startEndpoint,
  suspendEndpoint,
  updateEndpoint,
  type EndpointChange,
} from "./endpoints.ts";
import { branchPage } from "./branch-list.ts";
import {
  branchesOfProject,
  createBranch,
  deleteBranch,
  findBranch,
  updateBranch,
  type BranchChange,
} from "./branches.ts";
import { databasesOf, rolesOf } from "./catalog.ts";
import type { PostgresAddresses } from "./connection-uri.ts";
import { PlatformError } from "./errors.ts";
import type {
  AccountRecord,
  ApiKeyRecord,
  BranchRecord,
  EndpointRecord,
  OperationRecord,
  ProjectRecord,
} from "./model.ts";
import { getOperation, listOperations } from "./operations.ts";
import { organizationsOf } from "./projects.ts";
import {
  createApiKeyBody,
  createBranchBody,
  createEndpointBody,
  listBranchesQuery,
  listOperationsQuery,
  parseInput,
  updateBranchBody,
  updateEndpointBody,
} from "./requests.ts";
import { limitsOf } from "./plans.ts";
import {
  annotationView,
  apiKeyCreateView,
  apiKeyListView,
  apiKeyRevokeView,
  authDetailsView,
  branchView,
  currentUserView,
  databaseView,
  endpointView,
  operationView,
  organizationView,
  roleView,
} from "./views.ts";
import type { World } from "./world.ts";

/** Choices about the platform's answers where it has more than one (see docs/emulator.md). */
export interface ResponseShape {
  /** The status of a DELETE of an endpoint that does not exist or is already deleted (default 204, no body). */
  missingEndpointDelete: 204 | 404;
  /** Leave out response fields the OpenAPI document marks deprecated (default false: it still requires them). */
  dropDeprecatedFields: boolean;
  /** The most branches one page of the branch list holds, whatever `limit` asks (default 10,000, the document's maximum). */
  branchPageMax: number;
  /**
   * A user's key must name `org_id` to list or create projects once the user belongs to an
   * organization (default true: the platform answers 400 "org_id is required").
   */
  orgIdRequired: boolean;
}

export const defaultResponseShape: ResponseShape = {
  missingEndpointDelete: 204,
  dropDeprecatedFields: false,
  branchPageMax: 10_000,
  orgIdRequired: true,
};

export interface ApiContext {
  world: World;
  views: EndpointViews;
  shape: ResponseShape;
  /** The account of the request's key: it sees only its own projects and keys. */
  account: AccountRecord;
  /** The request's key (its project scope, if any: access.ts). */
  key: ApiKeyRecord;
  params: Record<string, string | undefined>;
  query: URLSearchParams;
  body: unknown;
  now: number;
  /** The emulator's Postgres, which connection URIs name; absent: the platform's host form. */
  postgres?: PostgresAddresses | undefined;
  /** Projects whose details do not load in time (a fault): `GET /projects` names them apart. */
  unavailableProjects: ReadonlySet<string>;
}

/** A response body already serialised (`json`), or a value to serialise (`body`). */
export type ApiResponse =
  | { status: number; body: unknown }
  | { status: number; json: string | Buffer }
  | { status: 204; empty: true };

export interface ApiRoute {
  method: HTTPMethod;
  path: string;
  /** A promise only where the answer waits on something besides the world (a Postgres port opening). */
  handle(ctx: ApiContext): ApiResponse | Promise<ApiResponse>;
}

/**
 * Serialised endpoints, reused until the world changes: listing a project's
 * endpoints is the hottest read and would otherwise rebuild every object.
 */
export class EndpointViews {
  private readonly world: World;
  private readonly dropDeprecatedFields: boolean;
  private readonly endpoints = new Map<string, string>();
  private readonly lists = new Map<string, Buffer>();
  private version = -1;

  constructor(world: World, shape: ResponseShape) {
    this.world = world;
    this.dropDeprecatedFields = shape.dropDeprecatedFields;
  }

  json(endpoint: EndpointRecord): string {
    this.expire();
    let json = this.endpoints.get(endpoint.id);
    if (json === undefined) {
      json = JSON.stringify(
        endpointView(endpoint, findProject(this.world, endpoint.projectId), {
          dropDeprecatedFields: this.dropDeprecatedFields,
        }),
      );
      this.endpoints.set(endpoint.id, json);
    }
    return json;
  }

  /** The `{"endpoints": [...]}` body, cached under `key` (a project or branch id) until the world changes. */
  list(key: string, endpoints: () => Iterable<EndpointRecord>): Buffer {
    this.expire();
    let body = this.lists.get(key);
    if (body === undefined) {
      const parts: string[] = [];
      for (const e of endpoints()) parts.push(this.json(e));
      body = Buffer.from(`{"endpoints":[${parts.join(",")}]}`);
      this.lists.set(key, body);
    }
    return body;
  }

  private expire(): void {
    if (this.version === this.world.version) return;
    this.endpoints.clear();
    this.lists.clear();
    this.version = this.world.version;
  }
}

export const param = (ctx: ApiContext, name: string): string => ctx.params[name] ?? "";

/** The branch a `/projects/:project_id/branches/:branch_id/...` route names (404 when it has none). */
export const branchOf = (ctx: ApiContext): BranchRecord =>
  findBranch(ctx.world, param(ctx, "project_id"), param(ctx, "branch_id"));

function endpointChange(
  ctx: ApiContext,
  status: number,
  change: EndpointChange,
  { pendingState }: { pendingState: boolean },
): ApiResponse {
  const project = findProject(ctx.world, change.endpoint.projectId);
  return {
    status,
    body: {
      endpoint: endpointView(change.endpoint, project, {
        pendingState,
        dropDeprecatedFields: ctx.shape.dropDeprecatedFields,
      }),
      operations: change.operations.map((op) => operationView(op, ctx.now)),
    },
  };
}

/** A branch and the operations a request started on it (a delete, a restore). */
export function branchChange(
  ctx: ApiContext,
  change: { branch: BranchRecord; operations: OperationRecord[] },
): ApiResponse {
  return {
    status: 200,
    body: {
      branch: branchView(change.branch, ctx.shape),
      operations: change.operations.map((op) => operationView(op, ctx.now)),
    },
  };
}

/** A new branch as its create answers it (`CreatedBranch`), 201. */
export function createdBranch(ctx: ApiContext, project: ProjectRecord, change: BranchChange): ApiResponse {
  return {
    status: 201,
    body: {
      branch: branchView(change.branch, ctx.shape),
      endpoints: change.endpoints.map((e) => endpointView(e, project, { ...ctx.shape, pendingState: true })),
      operations: change.operations.map((op) => operationView(op, ctx.now)),
      // Copied from the parent; passwords are shown only by reveal_password.
      roles: rolesOf(change.branch).map((r) => roleView(change.branch.id, r)),
      databases: databasesOf(change.branch).map((d) => databaseView(change.branch.id, d)),
    },
  };
}

/**
 * The update body has no annotation field (`BranchUpdateRequest`): a branch's annotation is set
 * only by its create. The platform's answer to one sent anyway is not documented; refusing it,
 * rather than ignoring it, keeps a client from believing it changed.
 */
function refuseAnnotationChange(body: unknown): void {
  if (typeof body !== "object" || body === null) return;
  const branch = (body as { branch?: unknown }).branch;
  const paths = [
    ...["annotation_value", "annotation", "annotations"].filter((key) => key in body),
    ...(typeof branch === "object" && branch !== null
      ? ["annotation_value", "annotation", "annotations"]
          .filter((key) => key in branch)
          .map((k) => `branch.${k}`)
      : []),
  ];
  if (paths.length > 0) {
    throw new PlatformError(
      400,
      `${paths[0]}: a branch's annotation is set only when it is created (annotation_value of the create); it cannot be changed`,
    );
  }
}

/**
 * The personal account whose keys `/api_keys` manages. An organization's key has none: the neon
 * CLI says organization keys "cannot create other keys", and the docs make organization keys with
 * a personal key; listing or revoking through these routes is refused too (the stricter reading).
 */
function personalAccount(ctx: ApiContext): AccountRecord {
  if (ctx.account.kind !== "user") {
    throw new PlatformError(
      403,
      "permission denied: an organization API key cannot manage personal API keys; use a personal API key",
    );
  }
  return ctx.account;
}

export const apiRoutes: ApiRoute[] = [
  {
    // Who the key belongs to: keys of one account share its rate budget.
    method: "GET",
    path: "/auth",
    handle: (ctx) => ({ status: 200, body: authDetailsView(ctx.account) }),
  },
  {
    method: "GET",
    path: "/users/me",
    handle(ctx) {
      // An organization's key is not tied to a user (a choice: the document does not say what it answers).
      if (ctx.account.kind !== "user") {
        throw new PlatformError(404, "user not found: the API key belongs to an organization");
      }
      return { status: 200, body: currentUserView(ctx.account, ctx.shape) };
    },
  },
  {
    // A user's organizations (those its projects name); an organization's key: that organization.
    method: "GET",
    path: "/users/me/organizations",
    handle(ctx) {
      const { account } = ctx;
      const plan = limitsOf(account).plan;
      return {
        status: 200,
        body: {
          organizations: organizationsOf(ctx.world, account).map((o) =>
            organizationView(o.id, o.name, account.createdAt, plan),
          ),
        },
      };
    },
  },
  {
    method: "POST",
    path: "/api_keys",
    handle(ctx) {
      personalAccount(ctx);
      const { key_name } = parseInput(createApiKeyBody, ctx.body);
      const { key, value } = createApiKey(ctx.world, ctx.account.id, key_name, ctx.now);
      return { status: 200, body: apiKeyCreateView(key, value, ctx.account.id) };
    },
  },
  {
    method: "GET",
    path: "/api_keys",
    handle: (ctx) => ({
      status: 200,
      body: listApiKeys(ctx.world, personalAccount(ctx).id).map((k) => apiKeyListView(k, ctx.account)),
    }),
  },
  {
    method: "DELETE",
    path: "/api_keys/:key_id",
    handle: (ctx) => ({
      status: 200,
      body: apiKeyRevokeView(
        revokeApiKey(ctx.world, personalAccount(ctx).id, param(ctx, "key_id")),
        ctx.account,
      ),
    }),
  },
  {
    method: "POST",
    path: "/projects/:project_id/endpoints",
    handle(ctx) {
      findProject(ctx.world, param(ctx, "project_id"));
      const { endpoint } = parseInput(createEndpointBody, ctx.body);
      const change = createEndpoint(ctx.world, param(ctx, "project_id"), endpoint, ctx.now);
      return endpointChange(ctx, 201, change, { pendingState: true });
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id/endpoints",
    handle(ctx) {
      const projectId = param(ctx, "project_id");
      findProject(ctx.world, projectId);
      const endpoints = () => ctx.world.endpointsByProject.get(projectId)?.values() ?? [];
      return { status: 200, json: ctx.views.list(projectId, endpoints) };
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id/endpoints/:endpoint_id",
    handle(ctx) {
      const endpoint = findEndpoint(ctx.world, param(ctx, "project_id"), param(ctx, "endpoint_id"));
      return { status: 200, json: `{"endpoint":${ctx.views.json(endpoint)}}` };
    },
  },
  {
    method: "PATCH",
    path: "/projects/:project_id/endpoints/:endpoint_id",
    handle(ctx) {
      findEndpoint(ctx.world, param(ctx, "project_id"), param(ctx, "endpoint_id"));
      const { endpoint } = parseInput(updateEndpointBody, ctx.body);
      const change = updateEndpoint(
        ctx.world,
        param(ctx, "project_id"),
        param(ctx, "endpoint_id"),
        endpoint,
        ctx.now,
      );
      return endpointChange(ctx, 200, change, { pendingState: true });
    },
  },
  {
    method: "DELETE",
    path: "/projects/:project_id/endpoints/:endpoint_id",
    handle(ctx) {
      const projectId = param(ctx, "project_id");
      findProject(ctx.world, projectId);
      const endpoint = ctx.world.endpoints.get(param(ctx, "endpoint_id"));
      // The document: 204 "if the endpoint doesn't exist or has already been deleted".
      if ((!endpoint || endpoint.projectId !== projectId) && ctx.shape.missingEndpointDelete === 204) {
        return { status: 204, empty: true };
      }
      return endpointChange(
        ctx,
        200,
        deleteEndpoint(ctx.world, projectId, param(ctx, "endpoint_id"), ctx.now),
        { pendingState: false },
      );
    },
  },
  ...(
    [
      ["start", startEndpoint],
      ["suspend", suspendEndpoint],
      ["restart", restartEndpoint],
    ] as const
  ).map(([verb, act]): ApiRoute => ({
    method: "POST",
    path: `/projects/:project_id/endpoints/:endpoint_id/${verb}`,
    handle: (ctx) =>
      endpointChange(ctx, 200, act(ctx.world, param(ctx, "project_id"), param(ctx, "endpoint_id"), ctx.now), {
        pendingState: false,
      }),
  })),
  {
    method: "GET",
    path: "/projects/:project_id/branches",
    handle(ctx) {
      const projectId = param(ctx, "project_id");
      findProject(ctx.world, projectId);
      const query = parseInput(listBranchesQuery, Object.fromEntries(ctx.query));
      const page = branchPage(branchesOfProject(ctx.world, projectId), query, ctx.shape.branchPageMax);
      const branches = page.branches.map((b) => branchView(b, ctx.shape));
      // The annotations of the listed branches that have one, by branch id.
      const annotations = Object.fromEntries(
        page.branches.filter((b) => b.annotation !== undefined).map((b) => [b.id, annotationView(b)]),
      );
      return { status: 200, body: { branches, annotations, pagination: page.pagination } };
    },
  },
  {
    method: "POST",
    path: "/projects/:project_id/branches",
    handle(ctx) {
      const projectId = param(ctx, "project_id");
      const project = findProject(ctx.world, projectId);
      const change = createBranch(ctx.world, projectId, parseInput(createBranchBody, ctx.body), ctx.now);
      return createdBranch(ctx, project, change);
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id/branches/:branch_id",
    handle(ctx) {
      const branch = findBranch(ctx.world, param(ctx, "project_id"), param(ctx, "branch_id"));
      return {
        status: 200,
        body: {
          branch: branchView(branch, ctx.shape),
          annotation: annotationView(branch),
        },
      };
    },
  },
  {
    method: "PATCH",
    path: "/projects/:project_id/branches/:branch_id",
    handle(ctx) {
      const projectId = param(ctx, "project_id");
      findBranch(ctx.world, projectId, param(ctx, "branch_id"));
      refuseAnnotationChange(ctx.body);
      const { branch } = parseInput(updateBranchBody, ctx.body);
      const change = updateBranch(ctx.world, projectId, param(ctx, "branch_id"), branch, ctx.now);
      return { status: 200, body: { branch: branchView(change.branch, ctx.shape), operations: [] } };
    },
  },
  {
    method: "DELETE",
    path: "/projects/:project_id/branches/:branch_id",
    handle(ctx) {
      const projectId = param(ctx, "project_id");
      findProject(ctx.world, projectId);
      const branch = ctx.world.branches.get(param(ctx, "branch_id"));
      // The document: 204 "if the branch doesn't exist or has already been deleted".
      if (!branch || branch.projectId !== projectId) return { status: 204, empty: true };
      return branchChange(ctx, deleteBranch(ctx.world, branch, ctx.now));
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id/branches/:branch_id/endpoints",
    handle(ctx) {
      const projectId = param(ctx, "project_id");
      findProject(ctx.world, projectId);
      const branch = findBranch(ctx.world, projectId, param(ctx, "branch_id"));
      return { status: 200, json: ctx.views.list(branch.id, () => ctx.world.endpointsOfBranch(branch.id)) };
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id/operations",
    handle(ctx) {
      const query = parseInput(listOperationsQuery, Object.fromEntries(ctx.query));
      const page = listOperations(ctx.world, param(ctx, "project_id"), query, ctx.now);
      return {
        status: 200,
        body: {
          operations: page.operations.map((op) => operationView(op, ctx.now)),
          pagination: { cursor: page.cursor },
        },
      };
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id/operations/:operation_id",
    handle: (ctx) => ({
      status: 200,
      body: {
        operation: operationView(
          getOperation(ctx.world, param(ctx, "project_id"), param(ctx, "operation_id")),
          ctx.now,
        ),
      },
    }),
  },
];
