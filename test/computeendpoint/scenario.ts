// What the ComputeEndpoint scenarios share: the controller factory for the harness, a manifest,
// and reading a resource until it is Ready for its current generation.
import { type ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import type { Controller, KubeObject } from "../../src/runtime/index.ts";
import { eventually } from "../support/kube.ts";
import type { OperatorHarness } from "../support/operator.ts";
import { computeEndpointController } from "../../src/controllers/registry.ts";

export const factory = (o: Parameters<typeof computeEndpointController>[0]) =>
  computeEndpointController(o) as unknown as Controller<KubeObject>;

/** A ComputeEndpoint manifest in project proj-alpha of the test seed. */
export function endpoint(name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) {
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name, ...(annotations ? { annotations } : {}) },
    spec: { projectId: "proj-alpha", ...spec },
  };
}

export function condition(obj: ComputeEndpointObject, type: string) {
  return obj.status?.conditions?.find((c) => c.type === type);
}

/** Reads resources of a harness's namespace, and waits for them to be Ready. */
export function reader(h: () => OperatorHarness) {
  const resource = (name: string) => h().get<ComputeEndpointObject>("computeendpoint", name);
  /** The resource once Ready for its current generation (and `check`). */
  const readyWith = (
    name: string,
    check: (o: ComputeEndpointObject) => boolean = () => true,
    timeoutMs?: number,
  ): Promise<ComputeEndpointObject> =>
    eventually(
      async () => {
        const obj = await resource(name);
        const c = condition(obj, "Ready");
        return c?.status === "True" && c.observedGeneration === obj.metadata.generation && check(obj)
          ? obj
          : undefined;
      },
      { what: `${name} Ready`, intervalMs: 200, ...(timeoutMs ? { timeoutMs } : {}) },
    );
  return { resource, readyWith };
}
