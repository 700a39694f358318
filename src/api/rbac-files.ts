// Where the generated RBAC goes (paths from the repository's root) and what each file holds.
import { renderClusterRole, renderHelmRules, renderNamespacedRole } from "./rbac.ts";

export const rbacFiles: Record<string, () => string> = {
  "deploy/base/clusterrole.yaml": renderClusterRole,
  "deploy/namespaced/role.yaml": renderNamespacedRole,
  "deploy/helm/neon-cloud-operator/files/rules.yaml": renderHelmRules,
};
