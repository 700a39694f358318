// Project sharing: the e-mail addresses a project is shared with (its permissions), granted,
// listed and revoked by anyone who may work in it (the platform: admins, members and
// collaborators may invite and remove collaborators), and `GET /projects/shared`, the projects
// shared with the calling key's user. Access follows at once (access.ts): a grant lets every key of
// the user with that address work in the project, a revocation takes it away.
import { randomUUID } from "node:crypto";
import { sharedWith, type Caller } from "./access.ts";
import { param, type ApiContext, type ApiResponse, type ApiRoute } from "./api-routes.ts";
import { findProject } from "./endpoints.ts";
import { PlatformError, notFound } from "./errors.ts";
import type { ProjectPermissionRecord } from "./model.ts";
import { projectPage } from "./projects.ts";
import { grantPermissionBody, listSharedProjectsQuery, parseInput } from "./requests.ts";
import { formatTimestamp } from "./timestamps.ts";
import { projectView } from "./views.ts";
import type { World } from "./world.ts";

/** `ProjectPermission`; a revoked one answers when it was revoked. */
function permissionView(p: ProjectPermissionRecord, revokedAt?: number): Record<string, unknown> {
  return {
    id: p.id,
    granted_to_email: p.email,
    granted_at: formatTimestamp(p.grantedAt),
    ...(revokedAt === undefined ? {} : { revoked_at: formatTimestamp(revokedAt) }),
  };
}

/**
 * Shares the project with an address. The document does not say what a second grant to the same
 * address answers: the stricter reading, a 409, keeps a client from taking a grant for new.
 */
function grant(world: World, projectId: string, email: string, now: number): ProjectPermissionRecord {
  const project = findProject(world, projectId);
  if (sharedWith(project, email)) {
    throw new PlatformError(409, "the project is already shared with this e-mail address");
  }
  const permission = { id: randomUUID(), email, grantedAt: now };
  project.permissions = [...(project.permissions ?? []), permission];
  world.changed();
  return permission;
}

/** Takes a grant back; an unknown (or already revoked) permission is 404. */
function revoke(world: World, projectId: string, permissionId: string): ProjectPermissionRecord {
  const project = findProject(world, projectId);
  const permission = project.permissions?.find((p) => p.id === permissionId);
  if (!permission) throw notFound("permission");
  project.permissions = project.permissions?.filter((p) => p !== permission);
  world.changed();
  return permission;
}

/**
 * `GET /projects/shared`: the projects shared with the e-mail of the key's user, paged as the
 * project list is. An organization's key belongs to no user: nothing is shared with it.
 */
function sharedProjects(ctx: ApiContext): ApiResponse {
  const query = parseInput(listSharedProjectsQuery, Object.fromEntries(ctx.query));
  const caller: Caller = ctx;
  const shared =
    caller.account.kind === "user"
      ? [...ctx.world.projects.values()]
          .filter((project) => sharedWith(project, caller.account.email))
          .map((project) => ({ project }))
      : [];
  const page = projectPage(shared, query);
  return {
    status: 200,
    body: {
      projects: page.projects.map(({ project }) => projectView(project, ctx.shape)),
      ...(page.cursor === undefined ? {} : { pagination: { cursor: page.cursor } }),
    },
  };
}

export const sharingRoutes: ApiRoute[] = [
  { method: "GET", path: "/projects/shared", handle: sharedProjects },
  {
    method: "GET",
    path: "/projects/:project_id/permissions",
    handle(ctx) {
      const project = findProject(ctx.world, param(ctx, "project_id"));
      const permissions = (project.permissions ?? []).map((p) => permissionView(p));
      return { status: 200, body: { project_permissions: permissions } };
    },
  },
  {
    method: "POST",
    path: "/projects/:project_id/permissions",
    handle(ctx) {
      findProject(ctx.world, param(ctx, "project_id"));
      const { email } = parseInput(grantPermissionBody, ctx.body);
      return {
        status: 200,
        body: permissionView(grant(ctx.world, param(ctx, "project_id"), email, ctx.now)),
      };
    },
  },
  {
    method: "DELETE",
    path: "/projects/:project_id/permissions/:permission_id",
    handle(ctx) {
      const revoked = revoke(ctx.world, param(ctx, "project_id"), param(ctx, "permission_id"));
      return { status: 200, body: permissionView(revoked, ctx.now) };
    },
  },
];
