// Bad specs are refused by the API server itself (CEL and OpenAPI rules from
// the zod schema), with a message naming the field and the rule, before the
// operator ever sees them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNamespace, kubectl } from "../support/kube.ts";

let namespace: string;

beforeAll(async () => {
  namespace = await createNamespace("cep-admission");
});

afterAll(async () => {
  await kubectl(["delete", "namespace", namespace, "--wait=false"]);
});

function apply(name: string, spec: Record<string, unknown>): Promise<string> {
  return kubectl(["apply", "-n", namespace, "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "ComputeEndpoint",
      metadata: { name },
      spec: { projectId: "proj-alpha", branchId: "br-dev", ...spec },
    }),
  });
}

describe("ComputeEndpoint admission", () => {
  it.each([
    [{ computeUnits: { min: 3, max: 2 } }, "computeUnits.min must be less than or equal to computeUnits.max"],
    [{ computeUnits: { min: 0.75 } }, "computeUnits.min must be 0.25, 0.5, a whole number from 1 to 16"],
    [{ computeUnits: { min: 2, max: 19 } }, "computeUnits.max must be 0.25, 0.5"],
    [{ computeUnits: { min: 12, max: 18 } }, "an autoscaling range (min < max) must stay within 16 CU"],
    [{ computeUnits: { min: 1, max: 10 } }, "computeUnits.max - computeUnits.min must be at most 8 CU"],
    [{ autosuspend: "30s" }, "autosuspend must be at least 60s"],
    [{ autosuspend: "200h" }, "autosuspend must be at most 168h"],
    [{ autosuspend: "soon" }, "spec.autosuspend"],
    [{ type: "replica" }, 'spec.type: Unsupported value: "replica"'],
    [{ projectId: "Not_An_Id" }, "spec.projectId"],
    [
      { managementPolicy: "ObserveOnly" },
      "managementPolicy ObserveOnly needs an endpointId (or projectRef.defaultEndpoint) to observe",
    ],
  ])("refuses %j with a message naming the rule", async (spec, message) => {
    await expect(apply("bad", spec)).rejects.toThrow(message);
  });

  it("accepts a fixed size above 16 CU, never as autosuspend, and a fixed 56 CU", async () => {
    await apply("big", { computeUnits: { min: 56 }, autosuspend: "never" });
    await apply("big-eq", { computeUnits: { min: 24, max: 24 } });
    await apply("ranged", { computeUnits: { min: 8, max: 16 }, autosuspend: "168h" });
  });

  it.each([
    [{ projectId: "proj-beta" }, "projectId is immutable"],
    [{ type: "read_only" }, "type is immutable"],
    [{ endpointId: "ep-other-1" }, "endpointId is immutable once set"],
  ])("refuses changing %j after creation", async (change, message) => {
    await apply("fixed", { endpointId: "ep-adopted-1" });
    await expect(apply("fixed", { endpointId: "ep-adopted-1", ...change })).rejects.toThrow(message);
  });

  it("explains its fields through kubectl explain", async () => {
    // kubectl wraps long descriptions; compare with white space folded.
    const explain = async (field: string) => (await kubectl(["explain", field])).replace(/\s+/g, " ");
    expect(await explain("computeendpoint.spec.computeUnits")).toContain(
      "Compute size in compute units (CU)",
    );
    expect(await explain("cep.spec.deletionPolicy")).toContain("Orphan leaves it running");
  });

  it("is listed in the neon category", async () => {
    const out = await kubectl(["get", "neon", "-n", namespace, "-o", "name"]);
    expect(out).toContain("computeendpoint.neoncloud.dev/big");
  });
});
