/**
 * Who reaches what, on the wire: a project's permissions (the e-mail addresses it is shared with)
 * and an organization's API keys, which may be scoped to one project. After the official OpenAPI
 * document's `ProjectPermission(s)`, `OrgApiKeyCreateResponse`, `OrgApiKeysListResponseItem` and
 * `OrgApiKeyRevokeResponse`: an organization's key is a personal key's fields and `project_id`.
 */
import { z } from "zod";
import { apiKeyCreatedWire, apiKeyRevokedWire, apiKeyWire } from "./schemas.ts";

const timestamp = z.string();

export const projectPermissionWire = z
  .object({
    id: z.string(),
    granted_to_email: z.string(),
    granted_at: timestamp,
    revoked_at: timestamp.optional(),
  })
  .transform((p) => ({
    id: p.id,
    grantedToEmail: p.granted_to_email,
    grantedAt: p.granted_at,
    revokedAt: p.revoked_at,
  }));

export type ProjectPermission = z.output<typeof projectPermissionWire>;

export const projectPermissionsWire = z
  .object({ project_permissions: z.array(projectPermissionWire) })
  .transform((r) => r.project_permissions);

/** The one project an organization's key may reach; absent: every project of the organization. */
const projectScopeWire = z
  .object({ project_id: z.string().optional() })
  .transform((s) => ({ projectId: s.project_id }));

export const orgApiKeyCreatedWire = z.intersection(apiKeyCreatedWire, projectScopeWire);
export type OrgApiKeyCreated = z.output<typeof orgApiKeyCreatedWire>;

export const orgApiKeysWire = z.array(z.intersection(apiKeyWire, projectScopeWire));
export type OrgApiKey = z.output<typeof orgApiKeysWire>[number];

export const orgApiKeyRevokedWire = z.intersection(apiKeyRevokedWire, projectScopeWire);
export type OrgApiKeyRevoked = z.output<typeof orgApiKeyRevokedWire>;
