// Branch: a branch of a project on the platform, declared in Kubernetes: created from a parent
// (a branch id, a branch name, or another Branch resource), optionally protected and expiring.
import { z } from "zod";
import { Conditions } from "./conditions.ts";
import { StatusOperation } from "./operations.ts";
import { restoredFromParentAtAnnotation } from "./group.ts";
import { defineKind } from "./kind.ts";
import {
  SecretKeyRef,
  boundedDuration,
  cel,
  immutable,
  objectName,
  platformId,
  sharedWithField,
} from "./fields.ts";
import { adoptDefault, projectIdField, projectRefField, projectRules } from "./project-ref.ts";

/** The platform's branch names: 1 to 256 characters (`BranchCreateRequest.branch.name`). */
const branchName = z.string().min(1).max(256);

export const BranchParent = z
  .object({
    branchId: platformId.optional().describe("The parent's platform branch id."),
    branchName: branchName.optional().describe("The parent's branch name in the project."),
    branchRef: z
      .object({ name: objectName.describe("Name of a Branch resource in this namespace.") })
      .optional()
      .describe("Another Branch resource in this namespace; this one waits until it is Ready."),
  })
  .describe(
    "The branch to create from: exactly one of branchId, branchName or branchRef. Omitted: the project's default branch. Immutable.",
  )
  .meta(
    cel(
      {
        rule: "[has(self.branchId), has(self.branchName), has(self.branchRef)].filter(x, x).size() == 1",
        message: "parent needs exactly one of branchId, branchName or branchRef",
      },
      { rule: "self == oldSelf", message: "parent is immutable" },
    ),
  );
export type BranchParent = z.infer<typeof BranchParent>;

/** Postgres identifiers: at most 63 bytes (NAMEDATALEN - 1); the platform refuses longer ones. */
const postgresName = z
  .string()
  .min(1)
  .max(63)
  .meta(cel({ rule: "size(bytes(self)) <= 63", message: "must be at most 63 bytes (a Postgres name)" }));

export const BranchRole = z
  .object({ name: postgresName.describe("The role's name (a Postgres identifier).") })
  .describe("A Postgres role the branch must have (created with a generated password).");
export type BranchRole = z.infer<typeof BranchRole>;

export const BranchDatabase = z
  .object({
    name: postgresName.describe("The database's name."),
    owner: postgresName.describe(
      "The role that owns it: one of spec.roles, or a role the branch already has (from its parent).",
    ),
  })
  .describe("A database the branch must have.");
export type BranchDatabase = z.infer<typeof BranchDatabase>;

/** A list keyed by name: the API server refuses two entries of one name. */
const byName = { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] } as const;

export const BranchSpec = z
  .object({
    projectId: projectIdField("branch"),
    projectRef: projectRefField("branch", { defaultBranch: adoptDefault("default branch") }),
    parent: BranchParent.optional(),
    name: branchName
      .optional()
      .describe(
        "The branch's name on the platform (the platform allows a rename). Default: k8s-<uid of this resource>, so a branch whose create answer was lost is found again.",
      ),
    protected: z
      .boolean()
      .optional()
      .describe("Protect the branch (the platform then refuses to delete it). Omitted: left as it is."),
    expiresAt: z.iso
      .datetime({ offset: true })
      .optional()
      .describe(
        "When the platform deletes the branch (RFC 3339, in the future). Changing it moves the expiry; it may replace a ttl.",
      ),
    ttl: boundedDuration("ttl", "1s")
      .optional()
      .describe(
        "Time to live from the branch's creation (a duration such as 72h): expires_at is computed once, when the branch is created, and kept in status. Its value cannot change; to move the expiry, replace ttl by expiresAt.",
      )
      .meta(immutable("ttl")),
    deletionPolicy: z
      .enum(["Delete", "Orphan"])
      .optional()
      .describe(
        "Delete removes the platform branch (and its endpoints) with this resource; Orphan leaves it. Omitted: Delete for a branch this resource created, Orphan for one it adopted (spec.branchId): an adopted branch is deleted only when the spec says Delete.",
      ),
    sharedWith: sharedWithField("branch"),
    roles: z
      .array(BranchRole)
      .max(50)
      .optional()
      .meta(byName)
      .describe(
        "Roles the branch must have: created when missing, never deleted by the operator (removing one from the list leaves it on the branch).",
      ),
    databases: z
      .array(BranchDatabase)
      .max(50)
      .optional()
      .meta(byName)
      .describe(
        "Databases the branch must have: created when missing, never deleted by the operator. The owner must be a role the branch has.",
      ),
    branchId: platformId
      .optional()
      .describe("An existing branch to adopt instead of creating one. Immutable once set."),
    credentials: SecretKeyRef.optional(),
  })
  .describe("The desired branch.")
  .meta(
    cel(
      ...projectRules,
      {
        rule: "!has(self.projectRef) || !self.projectRef.defaultBranch || (!has(self.parent) && !has(self.branchId))",
        message:
          "projectRef.defaultBranch adopts the project's default branch: it takes no parent and no branchId",
        fieldPath: ".projectRef.defaultBranch",
      },
      {
        rule: "!(has(self.expiresAt) && has(self.ttl))",
        message: "set expiresAt or ttl, not both",
      },
      {
        rule: "has(self.parent) == has(oldSelf.parent)",
        message: "parent is immutable",
        fieldPath: ".parent",
      },
      // An expiry that can move: ttl (counted from the creation, once) may be replaced by
      // expiresAt, which then moves the branch's expiry (the Branch controller PATCHes it); ttl
      // is never added later (it counts from the creation) nor removed alone.
      {
        rule: "!has(self.ttl) || has(oldSelf.ttl)",
        message: "ttl cannot be added after creation (it counts from the creation): set expiresAt instead",
        fieldPath: ".ttl",
      },
      {
        rule: "!has(oldSelf.ttl) || has(self.ttl) || has(self.expiresAt)",
        message: "ttl can only be replaced by expiresAt (which then moves the expiry), not removed alone",
        fieldPath: ".ttl",
      },
      {
        rule: "!has(oldSelf.branchId) || (has(self.branchId) && self.branchId == oldSelf.branchId)",
        message: "branchId is immutable once set",
        fieldPath: ".branchId",
      },
    ),
  );
export type BranchSpec = z.infer<typeof BranchSpec>;

export const BranchStatus = z
  .object({
    projectId: z
      .string()
      .optional()
      .describe("The project the branch is in (a projectRef resolved), from the first attempt on."),
    branchId: z.string().optional().describe("The platform's id of the branch."),
    name: z.string().optional().describe("The branch's name on the platform."),
    parentId: z.string().optional().describe("The parent's branch id."),
    parentLsn: z.string().optional().describe("The LSN of the parent the branch was created from."),
    parentTimestamp: z.string().optional().describe("The point in time of the parent it was created from."),
    currentState: z.string().optional().describe("init, resetting, ready or archived."),
    pendingState: z.string().optional().describe("The state a change under way leads to."),
    protected: z.boolean().optional(),
    default: z.boolean().optional().describe("The project's default branch."),
    createdAt: z.string().optional(),
    expiresAt: z
      .string()
      .optional()
      .describe("When the platform deletes the branch; with spec.ttl, computed once at creation."),
    updatedAt: z.string().optional().describe("When the platform last changed the branch."),
    lastResetAt: z.string().optional().describe("When the branch was last reset or restored."),
    roles: z
      .array(z.string())
      .optional()
      .describe("The roles of spec.roles the branch has, as last seen (other roles are not listed)."),
    databases: z
      .array(z.object({ name: z.string(), owner: z.string() }))
      .optional()
      .describe("The databases of spec.databases the branch has, with their owners, as last seen."),
    restoredFromParentAt: z
      .string()
      .optional()
      .describe(
        `The value of the ${restoredFromParentAtAnnotation} annotation last acted upon (the branch was reset from its parent for it).`,
      ),
    logicalSize: z.int().optional().describe("The branch's logical size in bytes."),
    endpoint: z
      .object({ name: z.string(), uid: z.string() })
      .optional()
      .describe(
        "The ComputeEndpoint of this namespace (name and UID) whose read-write endpoint the branch's create made in the same request (docs/branch.md): only that resource takes the endpoint over as its own.",
      ),
    operations: z.array(StatusOperation).optional().describe("Operations of the last change."),
    observedGeneration: z.int().optional(),
    conditions: Conditions.optional(),
  })
  .describe("The observed branch.");
export type BranchStatus = z.infer<typeof BranchStatus>;

export const branchKind = defineKind({
  kind: "Branch",
  plural: "branches",
  singular: "branch",
  shortNames: ["nbr"],
  description: "A branch of a serverless Postgres project on the platform.",
  spec: BranchSpec,
  status: BranchStatus,
  printerColumns: [
    // Resolved, so a projectRef shows its project too.
    { name: "Project", type: "string", jsonPath: ".status.projectId" },
    { name: "Branch", type: "string", jsonPath: ".status.branchId" },
    { name: "Name", type: "string", jsonPath: ".status.name" },
    { name: "State", type: "string", jsonPath: ".status.currentState" },
    { name: "Parent", type: "string", jsonPath: ".status.parentId", priority: 1 },
    { name: "Expires", type: "string", jsonPath: ".status.expiresAt", priority: 1 },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    {
      name: "Reason",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      priority: 1,
    },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
});
