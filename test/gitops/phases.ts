// What a user expects Argo CD and Flux (kstatus) to show for a resource in each
// lifecycle phase. The phases are captured live by phases.kube.test.ts.
import type { ArgoHealth, KStatus } from "../support/gitops.ts";

export type Phase =
  | "no status yet"
  | "creating"
  | "operations running"
  | "ready"
  | "suspended"
  | "invalid spec"
  | "unknown project"
  | "unauthorized"
  | "spec changed, not yet observed"
  | "deleting"
  | "waiting for parent"
  | "unknown branch"
  | "expired";

export interface Expectation {
  kind: "ComputeEndpoint" | "ApiKey" | "Branch" | "Project" | "Snapshot";
  phase: Phase;
  /** Argo CD's health, from deploy/argocd/health.lua. */
  argo?: ArgoHealth;
  /** kstatus' status (Flux health checks, kpt, cli-utils). */
  kstatus?: KStatus;
}
