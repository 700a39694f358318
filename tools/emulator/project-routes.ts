// The platform API's routes for projects: list (paged by id), create, read, update, delete,
// recover, and the regions a project may be created in.
import { param, type ApiContext, type ApiResponse, type ApiRoute } from "./api-routes.ts";
import { databasesOf, rolesOf } from "./catalog.ts";
import { connectionDetails } from "./connection-uri.ts";
import { findProject } from "./endpoints.ts";
import type { ProjectRecord } from "./model.ts";
import { createProject, deleteProject, recoverProject, updateProject } from "./project-changes.ts";
import { listProjects } from "./projects.ts";
import { regionsView } from "./regions.ts";
import { createProjectBody, listProjectsQuery, parseInput, updateProjectBody } from "./requests.ts";
import {
  branchView,
  databaseView,
  endpointView,
  operationView,
  projectDetailView,
  projectView,
  roleView,
} from "./views.ts";

/** A project as its own routes answer it, with its owner and when its computes were last active. */
function detail(ctx: ApiContext, project: ProjectRecord): Record<string, unknown> {
  let lastActive: number | undefined;
  for (const e of ctx.world.endpointsByProject.get(project.id)?.values() ?? []) {
    if (e.lastActive !== undefined && (lastActive === undefined || e.lastActive > lastActive)) {
      lastActive = e.lastActive;
    }
  }
  return projectDetailView(project, ctx.world.account(project.ownerId), {
    dropDeprecatedFields: ctx.shape.dropDeprecatedFields,
    computeLastActiveAt: lastActive,
  });
}

/** The unavailable projects (a fault) are named in `unavailable_project_ids`, not listed. */
function listed(ctx: ApiContext): ApiResponse {
  const query = parseInput(listProjectsQuery, Object.fromEntries(ctx.query));
  const page = listProjects(ctx.world, ctx, query, { orgIdRequired: ctx.shape.orgIdRequired });
  const unavailable = ctx.unavailableProjects;
  const shown = page.projects.filter(({ project }) => !unavailable.has(project.id));
  const missing = page.projects.filter(({ project }) => unavailable.has(project.id));
  return {
    status: 200,
    body: {
      projects: shown.map(({ project, deleted }) =>
        projectView(project, {
          dropDeprecatedFields: ctx.shape.dropDeprecatedFields,
          ...(deleted === undefined ? {} : { deleted }),
        }),
      ),
      ...(missing.length === 0 ? {} : { unavailable_project_ids: missing.map(({ project }) => project.id) }),
      ...(page.cursor === undefined ? {} : { pagination: { cursor: page.cursor } }),
      applications: {},
      integrations: {},
    },
  };
}

export const projectRoutes: ApiRoute[] = [
  { method: "GET", path: "/projects", handle: listed },
  {
    method: "POST",
    path: "/projects",
    async handle(ctx) {
      const { project: body } = parseInput(createProjectBody, ctx.body);
      const created = createProject(ctx.world, ctx.account, body, ctx.now, {
        orgIdRequired: ctx.shape.orgIdRequired,
      });
      const [primary] = created.branches;
      const [role] = rolesOf(primary!);
      const [database] = databasesOf(primary!);
      const details = await connectionDetails(
        created.endpoint,
        created.project,
        { name: role!.name, password: role!.password ?? "" },
        database!.name,
        ctx.postgres,
      );
      return {
        status: 201,
        body: {
          project: detail(ctx, created.project),
          connection_uris: [details],
          // The one answer that shows the owner role's password, stored or not.
          roles: [roleView(primary!.id, role!, role!.password)],
          databases: [databaseView(primary!.id, database!)],
          operations: created.operations.map((op) => operationView(op, ctx.now)),
          branch: branchView(primary!, ctx.shape),
          endpoints: [endpointView(created.endpoint, created.project, { ...ctx.shape, pendingState: true })],
        },
      };
    },
  },
  {
    method: "GET",
    path: "/projects/:project_id",
    handle: (ctx) => ({
      status: 200,
      body: { project: detail(ctx, findProject(ctx.world, param(ctx, "project_id"))) },
    }),
  },
  {
    method: "PATCH",
    path: "/projects/:project_id",
    handle(ctx) {
      const project = findProject(ctx.world, param(ctx, "project_id"));
      const body = parseInput(updateProjectBody, ctx.body);
      const change = updateProject(ctx.world, project, ctx.body, body.project, ctx.now);
      return {
        status: 200,
        body: {
          project: detail(ctx, change.project),
          operations: change.operations.map((op) => operationView(op, ctx.now)),
        },
      };
    },
  },
  {
    method: "DELETE",
    path: "/projects/:project_id",
    handle(ctx) {
      const project = findProject(ctx.world, param(ctx, "project_id"));
      // Read before it goes: its owner and computes are part of the answer.
      const answer = { project: detail(ctx, project) };
      deleteProject(ctx.world, project, ctx.now);
      return { status: 200, body: answer };
    },
  },
  {
    method: "POST",
    path: "/projects/:project_id/recover",
    handle(ctx) {
      const recovered = recoverProject(ctx.world, param(ctx, "project_id"), ctx.now);
      return {
        status: 200,
        body: {
          project: detail(ctx, recovered.project),
          branches: recovered.branches.map((b) => branchView(b, ctx.shape)),
        },
      };
    },
  },
  { method: "GET", path: "/regions", handle: () => ({ status: 200, body: regionsView() }) },
];
