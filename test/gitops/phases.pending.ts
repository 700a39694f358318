// Expectations that fail today, kept out of vitest (this file is no test file).
//
// Why they fail: an object the operator has not written to yet has no conditions and no
// status.observedGeneration, which kstatus takes for Current. Only a status the API server gives
// every new object could change that (e.g. a CRD default status.observedGeneration: 0, not tried);
// Argo CD's health (deploy/argocd/health.lua) already says Progressing. (Unknown project,
// unauthorized and ApiKey's invalid spec now set Stalled and moved into phases.kube.test.ts.)
import type { Expectation } from "./phases.ts";

export const pendingExpectations: Expectation[] = [
  { kind: "ComputeEndpoint", phase: "no status yet", kstatus: "InProgress" },
  { kind: "ApiKey", phase: "no status yet", kstatus: "InProgress" },
];
