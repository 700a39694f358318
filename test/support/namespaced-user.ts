// A user who holds rights in one namespace only, as a team member would: a
// namespace, a user with a client certificate signed by the control plane's CA
// (a real identity, not cluster-admin, not impersonation), bound there by a
// RoleBinding to the role that edits the operator's kinds. Security scenarios
// act as this user, so what RBAC refuses them is refused for real.
import { randomBytes } from "node:crypto";
import { KubeConfig } from "@kubernetes/client-node";
import { kinds } from "../../src/api/index.ts";
import { KubeClient } from "../../src/runtime/index.ts";
import { createNamespace, kubectl, userKubeconfig } from "./kube.ts";

/**
 * What a team's developer may do with the operator's kinds in their namespace: everything,
 * status read included, and nothing else (no Secrets, nothing cluster-scoped). The same as the
 * aggregated `edit` rules deploy/ ships for the kinds; `clusterRole` binds those instead.
 */
export const editNeonKindsRules = [
  {
    apiGroups: ["neoncloud.dev"],
    resources: kinds
      .filter((k) => (k.scope ?? "Namespaced") === "Namespaced")
      .flatMap((k) => [k.plural, `${k.plural}/status`]),
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
  },
  { apiGroups: ["", "events.k8s.io"], resources: ["events"], verbs: ["get", "list", "watch"] },
];

export interface NamespacedUser {
  /** The user's name (the certificate's CN). */
  user: string;
  namespace: string;
  /** A kubeconfig that authenticates as the user, its context in `namespace`. */
  kubeconfig: string;
  /** The runtime's client, acting as the user. */
  kube: KubeClient;
  /** kubectl as the user (in `namespace` unless the arguments say otherwise). */
  kubectl(args: string[], input?: string): Promise<string>;
  /** kubectl apply of `manifest` in the user's namespace, as the user. */
  apply(manifest: object): Promise<string>;
}

/**
 * A fresh namespace (`prefix-xxxxxx`, or `namespace` if given) and a user bound there to
 * `clusterRole` (once deploy/ ships the aggregated edit role) or, by default, to a Role with
 * `editNeonKindsRules`.
 */
export async function namespacedUser(
  prefix: string,
  options: { namespace?: string; clusterRole?: string; granted?: boolean } = {},
): Promise<NamespacedUser> {
  // A team's namespace is not granted the operator's key unless the test says so.
  const namespace =
    options.namespace ?? (await createNamespace(prefix, { granted: options.granted ?? false }));
  const user = `${prefix}-dev-${randomBytes(3).toString("hex")}`;
  const roleRef = options.clusterRole
    ? { kind: "ClusterRole", name: options.clusterRole }
    : { kind: "Role", name: "neon-edit" };
  if (!options.clusterRole) {
    await kubectl(["apply", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: "neon-edit", namespace },
        rules: editNeonKindsRules,
      }),
    });
  }
  await kubectl(["apply", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: `${user}-edit`, namespace },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", ...roleRef },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    }),
  });
  const kubeconfig = await userKubeconfig(user);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const asUser = (args: string[], input?: string) =>
    kubectl(["-n", namespace, ...args], { kubeconfig, ...(input !== undefined ? { input } : {}) });
  return {
    user,
    namespace,
    kubeconfig,
    kube: new KubeClient(kc),
    kubectl: asUser,
    apply: (manifest) => asUser(["apply", "-f", "-"], JSON.stringify(manifest)),
  };
}
