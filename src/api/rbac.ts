// What the operator may do in the namespaces it watches, written once: `npm run generate` turns
// it into the ClusterRole of deploy/base, the Role of deploy/namespaced and the rules the Helm
// chart grants (files/rules.yaml), so the three cannot drift apart.

export interface Rule {
  /** Why the operator needs it: the comment above the rule in every generated file. */
  why: string;
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

export const operatorRules: readonly Rule[] = [
  {
    why: "Watch the resources (get when the cache lags behind the operator's own write) and add or remove the operator's finalizer (a JSON patch).",
    apiGroups: ["neoncloud.dev"],
    resources: ["computeendpoints", "apikeys", "branches", "projects"],
    verbs: ["get", "list", "watch", "patch"],
  },
  {
    why: "Report state: status is a separate subresource, written by merge patches only.",
    apiGroups: ["neoncloud.dev"],
    resources: ["computeendpoints/status", "apikeys/status", "branches/status", "projects/status"],
    verbs: ["patch"],
  },
  {
    why: "Owner references with blockOwnerDeletion on the Secrets and ConfigMaps the operator creates need update on the owner's finalizers subresource.",
    apiGroups: ["neoncloud.dev"],
    resources: [
      "computeendpoints/finalizers",
      "apikeys/finalizers",
      "branches/finalizers",
      "projects/finalizers",
    ],
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

/** The leader-election Lease, in the operator's own namespace only: read, made once, renewed by update. */
export const leaseRule: Rule = {
  why: "Leader election: one Lease in the operator's own namespace, read, created once and renewed (an update with its resourceVersion).",
  apiGroups: ["coordination.k8s.io"],
  resources: ["leases"],
  verbs: ["get", "create", "update"],
};

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

/** Wraps a comment to lines of at most 80 characters, each starting with `indent# `. */
function comment(text: string, indent: string): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && indent.length + 2 + line.length + 1 + word.length > 80) {
      lines.push(`${indent}# ${line}`);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(`${indent}# ${line}`);
  return lines;
}

const list = (items: readonly string[]): string => `[${items.map((i) => (i === "" ? '""' : i)).join(", ")}]`;

/** The rules as a YAML sequence, each item indented by `indent`, with its reason above it. */
export function renderRules(indent = "", rules: readonly Rule[] = operatorRules): string {
  return rules
    .flatMap((rule) => [
      ...comment(rule.why, indent),
      `${indent}- apiGroups: ${list(rule.apiGroups)}`,
      `${indent}  resources: ${list(rule.resources)}`,
      `${indent}  verbs: ${list(rule.verbs)}`,
    ])
    .join("\n")
    .concat("\n");
}

const labels = `  labels:
    app.kubernetes.io/name: neon-cloud-operator
    app.kubernetes.io/instance: neon-cloud-operator
    app.kubernetes.io/part-of: neon-cloud-operator`;

const generated = "# Generated from src/api/rbac.ts by `npm run generate`: edit the rules there.";

/** A binding of the role `name` to the operator's ServiceAccount; `namespace` is the YAML value after `namespace: `. */
function operatorBinding(
  kind: "RoleBinding" | "ClusterRoleBinding",
  name: string,
  namespace?: string,
): string {
  return `apiVersion: rbac.authorization.k8s.io/v1
kind: ${kind}
metadata:
  name: ${name}
${namespace ? `  namespace: ${namespace}\n` : ""}${labels}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ${kind === "RoleBinding" ? "Role" : "ClusterRole"}
  name: ${name}
subjects:
  - kind: ServiceAccount
    name: neon-cloud-operator
    namespace: neon-cloud-operator
`;
}

/** deploy/base/clusterrole.yaml */
export function renderClusterRole(): string {
  return `${generated}
# Everything the operator does outside its own namespace, and nothing more:
# no wildcards, no access to any kind it does not manage or read.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: neon-cloud-operator
${labels}
rules:
${renderRules("  ")}`;
}

/** deploy/namespaced/role.yaml: the same rules, granted only in the watched namespace. */
export function renderNamespacedRole(): string {
  return `${generated}
# The ClusterRole's rules, granted only in the watched namespace (the overlay's
# kustomization sets the namespace where it says WATCHED).
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: neon-cloud-operator
  namespace: default # WATCHED
${labels}
rules:
${renderRules("  ")}---
${operatorBinding("RoleBinding", "neon-cloud-operator", "default # WATCHED")}`;
}

/** The Helm chart's files/rules.yaml, included by its ClusterRole and Roles. */
export function renderHelmRules(): string {
  return `${generated}\n${renderRules()}`;
}

/** deploy/base/leader-election-role.yaml: the Lease, in the operator's own namespace only. */
export function renderLeaderElectionRole(): string {
  return `${generated}
# Leader election: one Lease in the operator's own namespace, so of the two
# replicas only one reconciles at a time.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: neon-cloud-operator-leader-election
  namespace: neon-cloud-operator
${labels}
rules:
${renderRules("  ", [leaseRule])}---
${operatorBinding("RoleBinding", "neon-cloud-operator-leader-election", "neon-cloud-operator")}`;
}

/** The Helm chart's files/lease-rules.yaml, included by its leader-election Role. */
export function renderHelmLeaseRules(): string {
  return `${generated}\n${renderRules("", [leaseRule])}`;
}

const metricsReaderRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: neon-cloud-operator-metrics-reader
${labels}
rules:
  - nonResourceURLs: [/metrics]
    verbs: [get]
`;

/**
 * deploy/base/metrics-auth.yaml: the review rights of secure metrics, bound to the operator, and
 * the metrics-reader ClusterRole, bound to nobody: bind it to your scraper's ServiceAccount.
 */
export function renderMetricsAuth(): string {
  return `${generated}
# Secure metrics: the operator reviews each scrape's token with the API server.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: neon-cloud-operator-metrics-auth
${labels}
rules:
${renderRules("  ", metricsAuthRules)}---
${operatorBinding("ClusterRoleBinding", "neon-cloud-operator-metrics-auth")}---
# Who may scrape /metrics: bind this to Prometheus's ServiceAccount, e.g.
#   kubectl create clusterrolebinding prometheus-neon-metrics \\
#     --clusterrole=neon-cloud-operator-metrics-reader \\
#     --serviceaccount=monitoring:prometheus-k8s
${metricsReaderRole}`;
}

/** The Helm chart's files/metrics-auth-rules.yaml, included by its metrics-auth ClusterRole. */
export function renderHelmMetricsAuthRules(): string {
  return `${generated}\n${renderRules("", metricsAuthRules)}`;
}
