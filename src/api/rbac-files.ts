// Where the generated RBAC goes (paths from the repository's root) and what each file holds.
import {
  renderClusterRole,
  renderHelmLeaseRules,
  renderHelmMetricsAuthRules,
  renderHelmRules,
  renderLeaderElectionRole,
  renderMetricsAuth,
  renderNamespacedRole,
} from "./rbac.ts";

export const rbacFiles: Record<string, () => string> = {
  "deploy/base/clusterrole.yaml": renderClusterRole,
  "deploy/namespaced/role.yaml": renderNamespacedRole,
  "deploy/helm/neon-cloud-operator/files/rules.yaml": renderHelmRules,
  "deploy/base/leader-election-role.yaml": renderLeaderElectionRole,
  "deploy/helm/neon-cloud-operator/files/lease-rules.yaml": renderHelmLeaseRules,
  "deploy/base/metrics-auth.yaml": renderMetricsAuth,
  "deploy/helm/neon-cloud-operator/files/metrics-auth-rules.yaml": renderHelmMetricsAuthRules,
};
