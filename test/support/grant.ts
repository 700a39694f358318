// How the test cluster grants the operator's default credentials: one CredentialsGrant (the global
// setup applies it) selecting the namespaces that carry this label, as a platform team grants its
// teams' namespaces by a label (docs/security.md). createNamespace labels a new namespace unless a
// test wants one without the grant.
import { credentialsGrant } from "../../src/api/grant.ts";

export const grantedLabel = "neoncloud.dev/test-grant";

export const testGrant = credentialsGrant("test-namespaces", {
  namespaceSelector: { matchLabels: { [grantedLabel]: "default-credentials" } },
  projects: ["*"],
  createProjects: true,
  mintApiKeys: true,
});
