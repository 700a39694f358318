// CredentialsGrant: which namespaces may act with the operator's default credentials, on which
// projects, and whether they may create projects or mint API keys. Cluster-scoped, so only who
// may write cluster-scoped objects (a cluster administrator) grants; several grants add up; no
// grant means a namespace brings its own key (spec.credentials). The anchors: Crossplane's
// ClusterProviderConfig, cert-manager's ClusterIssuer, ACK's namespace-to-account mapping.
import { z } from "zod";
import { cel } from "./fields.ts";
import { ageColumn, defineKind } from "./kind.ts";

const namespaceName = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);

/** A set of strings: server-side apply merges it as a set, and a duplicate is refused at admission. */
const set = { "x-kubernetes-list-type": "set" } as const;

/** metav1.LabelSelector, as NetworkPolicy and RBAC aggregation use it. */
export const LabelSelector = z
  .object({
    matchLabels: z
      .record(z.string(), z.string())
      .optional()
      .describe("Labels a namespace must carry, each with this value."),
    matchExpressions: z
      .array(
        z
          .object({
            key: z.string().min(1).describe("The label's key."),
            operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"]),
            values: z
              .array(z.string())
              .optional()
              .describe("The values for In and NotIn (at least one); empty for Exists and DoesNotExist."),
          })
          .meta(
            cel({
              rule: "(self.operator == 'In' || self.operator == 'NotIn') ? (has(self.values) && size(self.values) > 0) : (!has(self.values) || size(self.values) == 0)",
              message: "In and NotIn need values; Exists and DoesNotExist take none",
              fieldPath: ".values",
            }),
          ),
      )
      .optional()
      .describe("Requirements on a namespace's labels; all must hold."),
  })
  .describe(
    "Namespaces selected by their labels (every requirement must hold); an empty selector ({}) selects every namespace.",
  );
export type LabelSelector = z.infer<typeof LabelSelector>;

export const CredentialsGrantSpec = z
  .object({
    namespaces: z.array(namespaceName).optional().describe("Namespaces granted, by name.").meta(set),
    namespaceSelector: LabelSelector.optional(),
    projects: z
      .array(
        z
          .string()
          .regex(/^(\*|[a-z0-9-]{1,60})$/)
          .describe("A project id, or * for every project of the account."),
      )
      .default([])
      .describe(
        'Project ids the namespaces may act on with the operator\'s default credentials; ["*"] grants every project of its account.',
      )
      .meta(set),
    createProjects: z
      .boolean()
      .default(false)
      .describe(
        "May create new projects with the operator's default credentials (a project a namespace creates is its own).",
      ),
    mintApiKeys: z
      .boolean()
      .default(false)
      .describe(
        "May mint API keys (ApiKey) with the operator's default credentials. A minted key acts on the whole account: grant with care (docs/security.md).",
      ),
    mintProjectApiKeys: z
      .boolean()
      .default(false)
      .describe(
        "May mint keys that reach one of the granted projects only (an ApiKey with spec.projectId: a key of the project's organization, scoped to it), without the account-wide mintApiKeys.",
      ),
  })
  .describe(
    "What the namespaces named or selected here may do with the operator's default credentials. Resources whose spec.credentials names a Secret of their own namespace need no grant.",
  )
  .meta(
    cel({
      rule: "has(self.namespaces) || has(self.namespaceSelector)",
      message: "set namespaces, namespaceSelector, or both",
    }),
  );
export type CredentialsGrantSpec = z.infer<typeof CredentialsGrantSpec>;

export const credentialsGrantKind = defineKind({
  kind: "CredentialsGrant",
  plural: "credentialsgrants",
  singular: "credentialsgrant",
  shortNames: ["ncg"],
  scope: "Cluster",
  description:
    "Grants namespaces the use of the operator's default credentials: for which projects, and whether they may create projects or mint API keys. Only cluster administrators can write it; without a grant a namespace brings its own key.",
  spec: CredentialsGrantSpec,
  printerColumns: [
    { name: "Namespaces", type: "string", jsonPath: ".spec.namespaces" },
    { name: "Selector", type: "string", jsonPath: ".spec.namespaceSelector", priority: 1 },
    { name: "Projects", type: "string", jsonPath: ".spec.projects" },
    { name: "Create Projects", type: "boolean", jsonPath: ".spec.createProjects", priority: 1 },
    { name: "Mint API Keys", type: "boolean", jsonPath: ".spec.mintApiKeys", priority: 1 },
    ageColumn,
  ],
});

/** A CredentialsGrant as a cluster administrator writes one (tools, benches and tests write them too). */
export function credentialsGrant(name: string, spec: z.input<typeof CredentialsGrantSpec>) {
  return {
    apiVersion: credentialsGrantKind.apiVersion,
    kind: credentialsGrantKind.kind,
    metadata: { name },
    spec,
  };
}
