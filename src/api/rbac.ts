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
    why: "Watch the resources and add or remove the operator's finalizer (a JSON patch).",
    apiGroups: ["neoncloud.dev"],
    resources: ["computeendpoints", "apikeys", "branches"],
    verbs: ["get", "list", "watch", "update", "patch"],
  },
  {
    why: "Report state; status is a separate subresource with its own permission.",
    apiGroups: ["neoncloud.dev"],
    resources: ["computeendpoints/status", "apikeys/status", "branches/status"],
    verbs: ["get", "update", "patch"],
  },
  {
    why: "Owner references with blockOwnerDeletion on the Secrets and ConfigMaps the operator creates need update on the owner's finalizers subresource.",
    apiGroups: ["neoncloud.dev"],
    resources: ["computeendpoints/finalizers", "apikeys/finalizers", "branches/finalizers"],
    verbs: ["update"],
  },
  {
    why: "ApiKey writes the Secrets it owns (the key value); both kinds read the credentials Secret a resource names.",
    apiGroups: [""],
    resources: ["secrets"],
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
  },
  {
    why: "ComputeEndpoint publishes connection details (host, port) in a ConfigMap it owns (server-side apply).",
    apiGroups: [""],
    resources: ["configmaps"],
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
  },
  {
    why: "Events on the resources (repeats are aggregated by a patch).",
    apiGroups: ["events.k8s.io"],
    resources: ["events"],
    verbs: ["create", "patch"],
  },
  {
    why: "The same Events through the core API, which some tools still read.",
    apiGroups: [""],
    resources: ["events"],
    verbs: ["create", "patch"],
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
export function renderRules(indent = ""): string {
  return operatorRules
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
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: neon-cloud-operator
  namespace: default # WATCHED
${labels}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: neon-cloud-operator
subjects:
  - kind: ServiceAccount
    name: neon-cloud-operator
    namespace: neon-cloud-operator
`;
}

/** The Helm chart's files/rules.yaml, included by its ClusterRole and Roles. */
export function renderHelmRules(): string {
  return `${generated}\n${renderRules()}`;
}
