// Every kind this operator serves, in one list for generators and the CLI.
import { apiKeyKind } from "./apikey.ts";
import { branchKind } from "./branch.ts";
import { computeEndpointKind } from "./computeendpoint.ts";
import { credentialsGrantKind } from "./grant.ts";
import { renderCrdYaml } from "./kind.ts";
import { projectKind } from "./project.ts";
import { snapshotKind } from "./snapshot.ts";

export { apiKeyKind, branchKind, computeEndpointKind, credentialsGrantKind, projectKind, snapshotKind };
export const kinds = [
  computeEndpointKind,
  apiKeyKind,
  branchKind,
  credentialsGrantKind,
  projectKind,
  snapshotKind,
] as const;

/** The file under crds/ that holds a kind's generated CRD. */
export function crdFileName(kind: { plural: string }): string {
  return `${kind.plural}.yaml`;
}

/** All CRDs as one multi-document YAML stream (what `neon-cloud-operator crds` prints). */
export function renderAllCrds(): string {
  return kinds.map((k) => renderCrdYaml(k)).join("---\n");
}
