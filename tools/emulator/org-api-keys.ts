// An organization's API keys: `GET|POST /organizations/{org_id}/api_keys` and
// `DELETE /organizations/{org_id}/api_keys/{key_id}`. A key made with `project_id` reaches that
// one project only (access.ts). Who may (the platform's docs, "Manage API keys" and "Manage
// organizations using the Neon API"): an admin of the organization with a personal key creates,
// lists and revokes; the organization's own key lists and revokes but does not create; a member
// who is not an admin does none of it (the docs since 2026-06: project-scoped keys need an admin
// too); anyone else does not see the organization (404).
import { inOrganization, membershipOf } from "./access.ts";
import { createApiKey, listApiKeys, revokeApiKey } from "./api-keys.ts";
import { param, type ApiContext, type ApiRoute } from "./api-routes.ts";
import { PlatformError, notFound } from "./errors.ts";
import type { AccountRecord, ApiKeyRecord } from "./model.ts";
import { createOrgApiKeyBody, parseInput } from "./requests.ts";
import { apiKeyCreateView, apiKeyListView, apiKeyRevokeView } from "./views.ts";
import type { World } from "./world.ts";

/** The organization of the path, as the caller may manage its keys. */
function managedOrganization(ctx: ApiContext): AccountRecord {
  const orgId = param(ctx, "org_id");
  const organization = ctx.world.accounts.get(orgId);
  if (organization?.kind === "organization") {
    if (ctx.account.id === organization.id) return organization;
    const membership = membershipOf(ctx.account, organization.id);
    if (membership && (membership.role ?? "admin") !== "admin") {
      throw new PlatformError(403, "permission denied: only an organization admin may manage its API keys");
    }
    if (membership) return organization;
  }
  throw notFound(`organization ${orgId}`);
}

/**
 * Who a key shows as created by (a user's id, as the document requires): the admin who made it;
 * for an organization's seeded key, its first admin in the world, else the organization itself.
 */
function creatorOf(world: World, key: ApiKeyRecord): AccountRecord {
  const creator = key.createdBy === undefined ? undefined : world.accounts.get(key.createdBy);
  if (creator) return creator;
  const owner = world.account(key.accountId);
  if (owner.kind === "user") return owner;
  const admin = [...world.accounts.values()].find((a) => {
    const membership = membershipOf(a, owner.id);
    return membership !== undefined && membership.role !== "member";
  });
  return admin ?? owner;
}

const scope = (key: ApiKeyRecord) => (key.projectId === undefined ? {} : { project_id: key.projectId });

export const orgApiKeyRoutes: ApiRoute[] = [
  {
    method: "GET",
    path: "/organizations/:org_id/api_keys",
    handle(ctx) {
      const organization = managedOrganization(ctx);
      const keys = listApiKeys(ctx.world, organization.id).map((k) => ({
        ...apiKeyListView(k, creatorOf(ctx.world, k)),
        ...scope(k),
      }));
      return { status: 200, body: keys };
    },
  },
  {
    method: "POST",
    path: "/organizations/:org_id/api_keys",
    handle(ctx) {
      const organization = managedOrganization(ctx);
      if (ctx.account.id === organization.id) {
        throw new PlatformError(
          403,
          "permission denied: an organization API key cannot create API keys; use a personal API key of an organization admin",
        );
      }
      const { key_name, project_id } = parseInput(createOrgApiKeyBody, ctx.body);
      if (project_id !== undefined) {
        const project = ctx.world.projects.get(project_id);
        if (!project || !inOrganization(project, organization.id)) {
          throw notFound(`project ${project_id} in organization ${organization.id}`);
        }
      }
      const { key, value } = createApiKey(ctx.world, organization.id, key_name, ctx.now);
      key.createdBy = ctx.account.id;
      if (project_id !== undefined) key.projectId = project_id;
      return { status: 200, body: { ...apiKeyCreateView(key, value, ctx.account.id), ...scope(key) } };
    },
  },
  {
    method: "DELETE",
    path: "/organizations/:org_id/api_keys/:key_id",
    handle(ctx) {
      const organization = managedOrganization(ctx);
      const key = revokeApiKey(ctx.world, organization.id, param(ctx, "key_id"));
      return { status: 200, body: { ...apiKeyRevokeView(key, creatorOf(ctx.world, key)), ...scope(key) } };
    },
  },
];
