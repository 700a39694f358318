// Who may do what with this operator's kinds, written once: `npm run generate` turns it into the
// roles of deploy/cluster, the bindings of deploy/base and deploy/operator, and the rule files
// the Helm chart includes (files/rbac/), so the installs cannot drift apart. Two audiences:
// - the operator's ServiceAccount: what its controllers need, and nothing more (no wildcards;
//   test/operator/rbac.kube.test.ts fails when a grant is missing or never used);
// - users: aggregated view/edit/admin ClusterRoles, so whoever holds Kubernetes' own view, edit
//   or admin role in a namespace may read or write this operator's resources there. Status is
//   written by the operator only: no user role may write it.
import { group } from "./group.ts";

export interface Rule {
  /** Why it is needed: the comment above the rule in every generated file. */
  why: string;
  apiGroups: string[];
  resources: string[];
  /** Objects the rule is limited to; RBAC cannot limit a create or a list without a field selector by name. */
  resourceNames?: string[];
  verbs: string[];
}

/**
 * The namespaced kinds, by plural: what users create and the operator reconciles. `projects` is
 * the Project kind of issue 25; the rules may name it before its CRD is installed (RBAC does not
 * check that a resource exists). src/api/rbac.test.ts checks every kind of src/api/index.ts is here.
 */
export const namespacedResources = [
  "computeendpoints",
  "apikeys",
  "branches",
  "projects",
  "snapshots",
] as const;

/** Cluster-scoped kinds: written by cluster administrators only, read by the operator. */
export const clusterResources = ["credentialsgrants"] as const;

/** The ConfigMap in the operator's own namespace that keeps its installation id (docs/security.md). */
export const identityConfigMap = "neon-cloud-operator-identity";

const sub = (suffix: string) => namespacedResources.map((r) => `${r}/${suffix}`);

/** What the operator may do in the namespaces it watches. */
export const operatorRules: readonly Rule[] = [
  {
    why: "Watch the resources (get when the cache lags behind the operator's own write) and add or remove the operator's finalizer (a JSON patch).",
    apiGroups: [group],
    resources: [...namespacedResources],
    verbs: ["get", "list", "watch", "patch"],
  },
  {
    why: "Report state: status is a separate subresource, written by merge patches only.",
    apiGroups: [group],
    resources: sub("status"),
    verbs: ["patch"],
  },
  {
    why: "Owner references with blockOwnerDeletion on the Secrets and ConfigMaps the operator creates need update on the owner's finalizers subresource.",
    apiGroups: [group],
    resources: sub("finalizers"),
    verbs: ["update"],
  },
  {
    why: "Read the credentials Secret a resource names (cached as metadata, data read by name); write the Secrets the operator owns by server-side apply (patch, and create when it makes one); delete an ApiKey's Secret when its key is revoked.",
    apiGroups: [""],
    resources: ["secrets"],
    verbs: ["get", "list", "watch", "create", "patch", "delete"],
  },
  {
    why: "ComputeEndpoint publishes connection details (host, port) in a ConfigMap it owns (watched; written by server-side apply; deleted by the garbage collector with its owner).",
    apiGroups: [""],
    resources: ["configmaps"],
    verbs: ["list", "watch", "create", "patch"],
  },
  {
    why: "Events on the resources (repeats are aggregated by a patch).",
    apiGroups: ["events.k8s.io"],
    resources: ["events"],
    verbs: ["create", "patch"],
  },
];

/**
 * Which namespaces may use the operator's default credentials. Both APIs are cluster-scoped, so
 * only a ClusterRole bound by a ClusterRoleBinding grants them, in every install.
 */
export const grantRules: readonly Rule[] = [
  {
    why: "CredentialsGrants say which namespaces may use the operator's default credentials, for which projects; cluster administrators write them, the operator only reads them (an informer: list and watch, never a get by name).",
    apiGroups: [group],
    resources: [...clusterResources],
    verbs: ["list", "watch"],
  },
  {
    why: "A grant's namespaceSelector matches namespaces by their labels (an informer: list and watch).",
    apiGroups: [""],
    resources: ["namespaces"],
    verbs: ["list", "watch"],
  },
];

/** The leader-election Lease, in the operator's own namespace only: read, made once, renewed by update. */
export const leaseRule: Rule = {
  why: "Leader election: one Lease in the operator's own namespace, read, created once and renewed (an update with its resourceVersion).",
  apiGroups: ["coordination.k8s.io"],
  resources: ["leases"],
  verbs: ["get", "create", "update"],
};

/** The installation id, in the operator's own namespace only: read by name, created at the first start. */
export const identityRules: readonly Rule[] = [
  {
    why: "Read the installation id (part of every owner mark the operator writes on platform objects).",
    apiGroups: [""],
    resources: ["configmaps"],
    resourceNames: [identityConfigMap],
    verbs: ["get"],
  },
  {
    why: "Create it at the first start (RBAC cannot limit a create to a name: a create carries none in its path).",
    apiGroups: [""],
    resources: ["configmaps"],
    verbs: ["create"],
  },
];

/**
 * Secure metrics (`--metrics-secure`): the operator asks the API server who a scrape's token
 * belongs to and whether that user may get /metrics. Both reviews are cluster-scoped APIs, so
 * only a ClusterRole can grant them; they read nothing of any namespace.
 */
export const metricsAuthRules: readonly Rule[] = [
  {
    why: "Authenticate a scrape of /metrics: whose is its bearer token?",
    apiGroups: ["authentication.k8s.io"],
    resources: ["tokenreviews"],
    verbs: ["create"],
  },
  {
    why: "Authorize it: may that user get the non-resource URL /metrics?",
    apiGroups: ["authorization.k8s.io"],
    resources: ["subjectaccessreviews"],
    verbs: ["create"],
  },
];

export type UserRoleName = "view" | "edit" | "admin";

export interface UserRole {
  name: UserRoleName;
  why: string;
  rules: readonly Rule[];
}

const read = ["get", "list", "watch"];
const write = ["create", "update", "patch", "delete", "deletecollection"];

const readResources: Rule = {
  why: "Read the resources and their status.",
  apiGroups: [group],
  resources: [...namespacedResources, ...sub("status")],
  verbs: read,
};

const writeResources: Rule = {
  why: "Create, change and delete the resources (never their status, which only the operator writes).",
  apiGroups: [group],
  resources: [...namespacedResources],
  verbs: write,
};

/**
 * The user-facing roles, aggregated into Kubernetes' own view, edit and admin ClusterRoles (label
 * `rbac.authorization.k8s.io/aggregate-to-<name>: "true"`), so a RoleBinding of `edit` in a
 * namespace lets its holder create this operator's resources there and nowhere else.
 */
export const userRoles: readonly UserRole[] = [
  {
    name: "view",
    why: "Read this operator's resources (aggregated into the view role).",
    rules: [readResources],
  },
  {
    name: "edit",
    why: "Read and write this operator's resources, not their status (aggregated into the edit role).",
    rules: [readResources, writeResources],
  },
  {
    name: "admin",
    why: "As edit, and CredentialsGrants (aggregated into the admin role). A grant is cluster-scoped: a RoleBinding of admin in a namespace never grants it, only a ClusterRoleBinding does.",
    rules: [
      readResources,
      writeResources,
      {
        why: "Say which namespaces may use the operator's default credentials (cluster-scoped: takes effect through a ClusterRoleBinding only).",
        apiGroups: [group],
        resources: [...clusterResources],
        verbs: [...read, ...write],
      },
    ],
  },
];

/** Wraps a comment to lines of at most 100 characters, each starting with `indent# `. */
function comment(text: string, indent: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && indent.length + 2 + line.length + 1 + word.length > 100) {
      lines.push(`${indent}# ${line}`);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(`${indent}# ${line}`);
  return lines;
}

/** `key: [a, b]` when it fits in prettier's 110 columns, else a block sequence (as prettier would not). */
function field(indent: string, key: string, items: readonly string[]): string[] {
  const quoted = items.map((i) => (i === "" ? '""' : i));
  const flow = `${indent}${key}: [${quoted.join(", ")}]`;
  const under = " ".repeat(indent.length + 2);
  return flow.length <= 110 ? [flow] : [`${indent}${key}:`, ...quoted.map((i) => `${under}- ${i}`)];
}

/** The rules as a YAML sequence, each item indented by `indent`, with its reason above it. */
export function renderRules(indent: string, rules: readonly Rule[]): string {
  return rules
    .flatMap((rule) => [
      ...comment(rule.why, indent),
      ...field(`${indent}- `, "apiGroups", rule.apiGroups),
      ...field(`${indent}  `, "resources", rule.resources),
      ...(rule.resourceNames ? field(`${indent}  `, "resourceNames", rule.resourceNames) : []),
      ...field(`${indent}  `, "verbs", rule.verbs),
    ])
    .join("\n")
    .concat("\n");
}

const operatorNamespace = "neon-cloud-operator";
const prefix = "neon-cloud-operator";

const labels = (extra: Record<string, string> = {}) =>
  [
    "  labels:",
    `    app.kubernetes.io/name: ${prefix}`,
    `    app.kubernetes.io/instance: ${prefix}`,
    `    app.kubernetes.io/part-of: ${prefix}`,
    ...Object.entries(extra).map(([k, v]) => `    ${k}: "${v}"`),
  ].join("\n");

const generated = "# Generated from src/api/rbac.ts by `npm run generate`: edit the rules there.";

function role(kind: "Role" | "ClusterRole", name: string, rules: readonly Rule[], extraLabels = {}): string {
  return `apiVersion: rbac.authorization.k8s.io/v1
kind: ${kind}
metadata:
  name: ${name}
${kind === "Role" ? `  namespace: ${operatorNamespace}\n` : ""}${labels(extraLabels)}
rules:
${renderRules("  ", rules)}`;
}

/** A binding of the role `name` to the operator's ServiceAccount. */
function binding(kind: "RoleBinding" | "ClusterRoleBinding", roleKind: string, name: string): string {
  return `apiVersion: rbac.authorization.k8s.io/v1
kind: ${kind}
metadata:
  name: ${name}
${kind === "RoleBinding" ? `  namespace: ${operatorNamespace}\n` : ""}${labels()}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ${roleKind}
  name: ${name}
subjects:
  - kind: ServiceAccount
    name: ${prefix}
    namespace: ${operatorNamespace}
`;
}

/** The ClusterRoles an operator's ServiceAccount is given, by name suffix (the chart prefixes its release's name). */
export const operatorClusterRoles = {
  "": operatorRules,
  "-grants": grantRules,
  "-metrics-auth": metricsAuthRules,
} as const;

const metricsReaderRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${prefix}-metrics-reader
${labels()}
rules:
  - nonResourceURLs: [/metrics]
    verbs: [get]
`;

/** deploy/cluster/operator-roles.yaml: what an operator's ServiceAccount is given, bound to nobody here. */
export function renderOperatorClusterRoles(): string {
  return `${generated}
# What an operator's ServiceAccount may be given, bound to nobody here: deploy/base binds them
# cluster-wide; for deploy/namespaced a cluster administrator binds them to one namespace's
# operator (docs/install.md). No wildcards, no access to any kind the operator does not manage.
#
# ${prefix}: the rules in the namespaces it watches (a ClusterRoleBinding: every namespace;
# a RoleBinding: that namespace only).
${role("ClusterRole", prefix, operatorRules)}---
# Cluster-scoped reads: bound by a ClusterRoleBinding in every install.
${role("ClusterRole", `${prefix}-grants`, grantRules)}---
# Secure metrics: the operator reviews each scrape's token with the API server.
${role("ClusterRole", `${prefix}-metrics-auth`, metricsAuthRules)}---
# Who may scrape /metrics: bind this to Prometheus's ServiceAccount, e.g.
#   kubectl create clusterrolebinding prometheus-neon-metrics \\
#     --clusterrole=${prefix}-metrics-reader \\
#     --serviceaccount=monitoring:prometheus-k8s
${metricsReaderRole}`;
}

const aggregateLabel = (name: UserRoleName) => ({
  [`rbac.authorization.k8s.io/aggregate-to-${name}`]: "true",
});

/** deploy/cluster/user-roles.yaml: the aggregated view, edit and admin roles. */
export function renderUserRoles(): string {
  return `${generated}
# For people: Kubernetes aggregates these into its own view, edit and admin ClusterRoles, so
# whoever holds one of those in a namespace (a RoleBinding) may read or write this operator's
# resources there, and nowhere else. Nobody but the operator writes status.
${userRoles
  .map(
    (r) =>
      `${comment(r.why, "").join("\n")}\n${role("ClusterRole", `${prefix}-${r.name}`, r.rules, aggregateLabel(r.name))}`,
  )
  .join("---\n")}`;
}

/** deploy/base/bindings.yaml: the operator's ClusterRoles, bound cluster-wide. */
export function renderClusterBindings(): string {
  return `${generated}
# The cluster-wide install: the operator's ClusterRoles (deploy/cluster/operator-roles.yaml)
# bound to its ServiceAccount in every namespace.
${Object.keys(operatorClusterRoles)
  .map((suffix) => binding("ClusterRoleBinding", "ClusterRole", `${prefix}${suffix}`))
  .join("---\n")}`;
}

/** deploy/operator/own-namespace-roles.yaml: the Lease and the installation id, in the operator's namespace only. */
export function renderOwnNamespaceRoles(): string {
  return `${generated}
# In the operator's own namespace only. Leader election: one Lease, so of the replicas only one
# reconciles at a time.
${role("Role", `${prefix}-leader-election`, [leaseRule])}---
${binding("RoleBinding", "Role", `${prefix}-leader-election`)}---
# The installation id, kept in the ConfigMap ${identityConfigMap}.
${role("Role", `${prefix}-identity`, identityRules)}---
${binding("RoleBinding", "Role", `${prefix}-identity`)}`;
}

/** A rule file of the Helm chart (files/rbac/), included by its templates. */
function helmRules(rules: readonly Rule[]): () => string {
  return () => `${generated}\n${renderRules("", rules)}`;
}

/** The chart's rule files, by path inside the chart. */
export const helmRuleFiles: Record<string, () => string> = {
  "files/rbac/operator.yaml": helmRules(operatorRules),
  "files/rbac/grants.yaml": helmRules(grantRules),
  "files/rbac/metrics-auth.yaml": helmRules(metricsAuthRules),
  "files/rbac/lease.yaml": helmRules([leaseRule]),
  "files/rbac/identity.yaml": helmRules(identityRules),
  ...Object.fromEntries(userRoles.map((r) => [`files/rbac/user-${r.name}.yaml`, helmRules(r.rules)])),
};
