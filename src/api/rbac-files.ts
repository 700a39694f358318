// Where the generated RBAC goes (paths from the repository's root) and what each file holds.
import {
  helmRuleFiles,
  renderClusterBindings,
  renderOperatorClusterRoles,
  renderOwnNamespaceRoles,
  renderUserRoles,
} from "./rbac.ts";

const chart = "deploy/helm/neon-cloud-operator";

export const rbacFiles: Record<string, () => string> = {
  "deploy/cluster/operator-roles.yaml": renderOperatorClusterRoles,
  "deploy/cluster/user-roles.yaml": renderUserRoles,
  "deploy/base/bindings.yaml": renderClusterBindings,
  "deploy/operator/own-namespace-roles.yaml": renderOwnNamespaceRoles,
  ...Object.fromEntries(Object.entries(helmRuleFiles).map(([path, render]) => [`${chart}/${path}`, render])),
};
