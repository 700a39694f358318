// Expectations that fail on today's controllers, kept out of vitest (this file
// is no test file). Move each row into `expectations` in phases.kube.test.ts once
// the managed layer sets Stalled/Reconciling and observedGeneration on every kind.
//
// Why each fails today (kstatus reads Reconciling/Stalled and status.observedGeneration;
// Ready=False without Stalled is InProgress, for ever):
// - ComputeEndpoint "unknown project" / "unauthorized": Ready=False, Synced=False, but no
//   Stalled=True, so kstatus says InProgress and Flux waits for its timeout. A problem only a
//   person can fix should set Stalled=True (while the operator keeps retrying slowly).
// - ApiKey "invalid spec" / "unauthorized": only Ready=False is set, status.observedGeneration is
//   not written on failure: InProgress for ever.
// - "no status yet" (both kinds): an object the operator has not written to has no conditions and
//   no status.observedGeneration, which kstatus takes for Current. Only a status the API server
//   gives every new object could change that (e.g. a CRD default status.observedGeneration: 0);
//   Argo CD's health (deploy/argocd/health.lua) already says Progressing.
import type { Expectation } from "./phases.ts";

export const pendingExpectations: Expectation[] = [
  { kind: "ComputeEndpoint", phase: "unknown project", kstatus: "Failed" },
  { kind: "ComputeEndpoint", phase: "unauthorized", kstatus: "Failed" },
  { kind: "ComputeEndpoint", phase: "no status yet", kstatus: "InProgress" },
  { kind: "ApiKey", phase: "invalid spec", kstatus: "Failed" },
  { kind: "ApiKey", phase: "unauthorized", kstatus: "Failed" },
  { kind: "ApiKey", phase: "no status yet", kstatus: "InProgress" },
];
