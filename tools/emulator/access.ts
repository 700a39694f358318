// Who may act on what: a key's reach over projects and routes, decided in one place for every
// request (emulator.ts calls `checkAccess` before any route runs). The platform's three kinds of
// key (docs: "Manage API keys") and its roles (docs: "User permissions"):
//
// - a user's personal key: its own projects, the projects of the organizations it is a member of
//   (an admin's rights or a member's), and the projects shared with its e-mail (a collaborator's);
// - an organization's key: every project of the organization, with an admin's rights;
// - an organization's key scoped to one project: that project only, with a member's rights.
//
// A project out of reach is as unknown as one that does not exist (404). A visible project the
// role may not delete or recover is 403, never 404: a client must not read "already gone" into a
// refusal. See docs/emulator.md ("Access") for the sources and the choices.
import { PlatformError, notFound } from "./errors.ts";
import type { AccountRecord, ApiKeyRecord, OrganizationMembership, ProjectRecord } from "./model.ts";
import type { World } from "./world.ts";

/** The account a request acts as, and the key it was sent with (its project scope, if any). */
export interface Caller {
  account: AccountRecord;
  key: ApiKeyRecord;
}

/** What a caller may do in a project: an admin also deletes and recovers it. */
export type ProjectRole = "admin" | "member" | "collaborator";

/**
 * Routes a project-scoped key may call besides its project's own: who it is (`/auth`), the
 * organization that owns it (the document: `/users/me/organizations` answers it for such a key)
 * and the project list, which shows its one project. Everything else of the account is refused.
 */
const scopedKeyAccountRoutes: ReadonlySet<string> = new Set([
  "GET /auth",
  "GET /users/me/organizations",
  "GET /projects",
]);

/** The platform: "Only Admins can delete organization projects"; a recovery undoes a deletion. */
const adminOnlyRoutes: ReadonlySet<string> = new Set([
  "DELETE /projects/:project_id",
  "POST /projects/:project_id/recover",
]);

/**
 * The platform's refusal of a project-scoped key outside its project: a 404 whose message says
 * so (the platform's own MCP server recognises it by "outside the project" or "project-scoped").
 */
export function outsideScope(key: ApiKeyRecord): PlatformError {
  return new PlatformError(
    404,
    `not found: the API key is project-scoped and may not act outside the project ${key.projectId ?? ""}`,
  );
}

/** Whether an organization holds the project (owns it, or a member created it in it). */
export function inOrganization(project: ProjectRecord, orgId: string): boolean {
  return project.ownerId === orgId || project.orgId === orgId;
}

/** A user's membership of an organization, if it has one. */
export function membershipOf(account: AccountRecord, orgId: string): OrganizationMembership | undefined {
  return account.kind === "user" ? account.organizations?.find((o) => o.id === orgId) : undefined;
}

/** Whether the project is shared with this e-mail address (addresses compare in any case). */
export function sharedWith(project: ProjectRecord, email: string): boolean {
  const wanted = email.toLowerCase();
  return project.permissions?.some((p) => p.email.toLowerCase() === wanted) ?? false;
}

/** The caller's role in a project; undefined: out of reach. */
export function projectRole(caller: Caller, project: ProjectRecord): ProjectRole | undefined {
  const { account, key } = caller;
  if (key.projectId !== undefined) {
    // Member-level, and only while its organization holds the project.
    return project.id === key.projectId && inOrganization(project, account.id) ? "member" : undefined;
  }
  if (project.ownerId === account.id) return "admin";
  if (account.kind === "organization") return project.orgId === account.id ? "admin" : undefined;
  const membership = project.orgId === undefined ? undefined : membershipOf(account, project.orgId);
  if (membership) return membership.role ?? "admin";
  return sharedWith(project, account.email) ? "collaborator" : undefined;
}

/**
 * Refuses a request the caller may not make, before its route runs: a project out of reach
 * (404), a deletion or recovery by a role other than admin (403), and any route of the account
 * that a project-scoped key may not call (404).
 */
export function checkAccess(
  world: World,
  caller: Caller,
  route: string,
  params: Record<string, string | undefined>,
): void {
  const { key } = caller;
  const projectId = params["project_id"];
  if (projectId === undefined) {
    if (key.projectId !== undefined && !scopedKeyAccountRoutes.has(route)) throw outsideScope(key);
    return;
  }
  if (key.projectId !== undefined && projectId !== key.projectId) throw outsideScope(key);
  // A deleted project within its recovery window is still someone's: only they may recover it.
  const project = world.projects.get(projectId) ?? world.deletedProjects.get(projectId)?.project;
  if (!project) return; // the route answers for an unknown project
  const role = projectRole(caller, project);
  if (!role) throw key.projectId === undefined ? notFound("project") : outsideScope(key);
  if (role !== "admin" && adminOnlyRoutes.has(route)) {
    throw new PlatformError(
      403,
      `permission denied: only an organization admin may ${route.startsWith("DELETE") ? "delete" : "recover"} a project (this key has a ${role}'s access)`,
    );
  }
}

/** The account that owns a project a user creates in an organization: the organization's, when it is one. */
export function projectOwner(world: World, account: AccountRecord, orgId: string | undefined): AccountRecord {
  if (orgId === undefined || !membershipOf(account, orgId)) return account;
  const organization = world.accounts.get(orgId);
  return organization?.kind === "organization" ? organization : account;
}

/**
 * Whether `GET /projects` lists the project for the caller, in the organization the request acts
 * in (`orgId`, projects.ts `organizationOf`): a project-scoped key its one project; an
 * organization's key the organization's; a user its own outside organizations, and in one, the
 * organization's if a member (else its own there). Shared projects are listed apart
 * (`/projects/shared`).
 */
export function listsProject(caller: Caller, project: ProjectRecord, orgId: string | undefined): boolean {
  const { account, key } = caller;
  if (key.projectId !== undefined) return project.id === key.projectId && inOrganization(project, account.id);
  if (account.kind === "organization") return inOrganization(project, account.id);
  if (orgId === undefined) return project.ownerId === account.id;
  if (!inOrganization(project, orgId)) return false;
  return project.ownerId === account.id || membershipOf(account, orgId) !== undefined;
}
