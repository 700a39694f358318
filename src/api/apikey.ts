// ApiKey: a platform API key, kept in a Kubernetes Secret, rotated and revoked.
import { z } from "zod";
import { Conditions } from "./conditions.ts";
import { ageColumn, defineKind } from "./kind.ts";
import { SecretKeyRef, boundedDuration, cel, immutable, objectName, platformId } from "./fields.ts";

export const ApiKeySpec = z
  .object({
    keyName: z
      .string()
      .min(1)
      .max(48)
      .optional()
      .describe(
        "The key's name on the platform. Default: the resource's name. The operator appends a short suffix per key it creates, so a key whose create response was lost can be found and revoked. Immutable.",
      )
      .meta(immutable("keyName")),
    secretName: objectName
      .optional()
      .describe("The Secret to write the key to (keys apiKey and keyId). Default: <name>-api-key. Immutable.")
      .meta(immutable("secretName")),
    projectId: platformId
      .optional()
      .describe(
        "Mint a key that reaches this one project only: a key of the project's organization, scoped to it (a member's rights there, nothing elsewhere). Omitted: an account-wide key of the credentials' user, which a CredentialsGrant allows only with mintApiKeys. Immutable.",
      )
      .meta(immutable("projectId")),
    credentials: SecretKeyRef.optional(),
    deletionPolicy: z
      .enum(["Revoke", "Retain"])
      .default("Revoke")
      .describe("Revoke revokes the key with this resource; Retain keeps the key and its Secret."),
    rotation: z
      .object({
        interval: boundedDuration("rotation.interval", "5s").describe(
          "How often a new key replaces the current one, for example 720h.",
        ),
        gracePeriod: boundedDuration("rotation.gracePeriod", "0s")
          .default("1h")
          .describe(
            "How long the previous key keeps working after a rotation, so its users can re-read the Secret.",
          ),
      })
      .optional()
      .describe("Scheduled rotation of the key."),
  })
  .describe("The desired API key.")
  .meta(
    cel({
      rule: "!has(self.rotation) || duration(self.rotation.gracePeriod) < duration(self.rotation.interval)",
      message: "rotation.gracePeriod must be shorter than rotation.interval",
      fieldPath: ".rotation.gracePeriod",
    }),
  );
export type ApiKeySpec = z.infer<typeof ApiKeySpec>;

export const ApiKeyStatus = z
  .object({
    keyId: z.int().optional().describe("The platform's id of the current key."),
    projectId: z.string().optional().describe("The one project the keys reach (a scoped key)."),
    orgId: z.string().optional().describe("The organization a scoped key belongs to (the project's)."),
    keyName: z.string().optional().describe("The platform name of the current key."),
    pendingKeyName: z
      .string()
      .optional()
      .describe("Name of a key being created; recorded first so a lost create can be found and revoked."),
    keyFingerprint: z
      .string()
      .optional()
      .describe(
        "The first 16 hex digits of the SHA-256 of the key in the Secret (never the key): tells whether the Secret still holds the current key.",
      ),
    createdAt: z.string().optional(),
    lastUsedAt: z.string().optional(),
    lastUsedFromAddr: z.string().optional(),
    secretName: z.string().optional(),
    previousKeyId: z.int().optional().describe("The replaced key, while the rotation's grace period runs."),
    previousKeyRevokeAt: z.string().optional().describe("When the previous key is revoked."),
    nextRotationAt: z.string().optional(),
    observedGeneration: z.int().optional(),
    conditions: Conditions.optional(),
  })
  .describe("The observed API key. The key value itself is only ever in the Secret.");
export type ApiKeyStatus = z.infer<typeof ApiKeyStatus>;

export const apiKeyKind = defineKind({
  kind: "ApiKey",
  plural: "apikeys",
  singular: "apikey",
  shortNames: ["nak"],
  description:
    "A platform API key, stored in a Secret, optionally rotated, revoked when the resource is deleted.",
  spec: ApiKeySpec,
  status: ApiKeyStatus,
  printerColumns: [
    { name: "Key Name", type: "string", jsonPath: ".status.keyName" },
    { name: "Key ID", type: "integer", jsonPath: ".status.keyId" },
    {
      name: "Project",
      type: "string",
      jsonPath: ".status.projectId",
      description: "The one project a scoped key reaches.",
    },
    { name: "Secret", type: "string", jsonPath: ".status.secretName" },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    // A string, not a date: kubectl prints a date column as the time since it, and a time to
    // come as <invalid>. The timestamp itself reads right.
    {
      name: "Next Rotation",
      type: "string",
      jsonPath: ".status.nextRotationAt",
      priority: 1,
      description: "When the key is rotated next (RFC 3339).",
    },
    ageColumn,
  ],
});
