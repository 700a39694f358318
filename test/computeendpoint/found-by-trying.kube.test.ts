// Bugs found by trying the product as a new user would, each a scenario that failed before the
// managed-resource layer fixed it: adopting an endpoint made outside, deleting a resource whose
// project does not exist, and a refused operator key that must not turn into a burst of requests.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { eventually, kubectl } from "../support/kube.ts";
import { credentialsSecret, startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { condition, endpoint, factory, reader } from "./scenario.ts";

let h: OperatorHarness;
const { resource, readyWith } = reader(() => h);

async function setOperatorKey(key: string): Promise<void> {
  await applyCredentialsSecret(h.namespace, credentialsSecret, key);
}

beforeAll(async () => {
  h = await startOperatorHarness(factory, { prefix: "cep-found" });
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("ComputeEndpoint, as a new user tries it", () => {
  it("adopts an endpoint made outside the operator at once, though the project's list was read before", async () => {
    // The operator has read proj-alpha's endpoints already (this resource's create)...
    await h.apply(endpoint("first", { branchId: "br-dev" }));
    await readyWith("first");
    // ...then someone makes an endpoint in the console and asks the operator to adopt it.
    const made = await h.platform.createEndpoint("proj-alpha", {
      branchId: "br-staging",
      type: "read_write",
    });
    await h.apply(endpoint("adopted", { branchId: "br-staging", endpointId: made.endpoint.id }));
    const obj = await readyWith("adopted");
    expect(obj.status?.endpointId).toBe(made.endpoint.id);
  });

  it("a resource naming a project that does not exist shows Stalled and can be deleted", async () => {
    await h.apply(endpoint("nowhere", { projectId: "proj-missing", branchId: "br-dev" }));
    const stuck = await eventually(
      async () => {
        const obj = await resource("nowhere");
        return condition(obj, "Ready")?.reason === "ProjectNotFound" ? obj : undefined;
      },
      { what: "ProjectNotFound" },
    );
    expect(condition(stuck, "Stalled")?.status).toBe("True");
    await kubectl(["delete", "computeendpoint", "nowhere", "-n", h.namespace, "--timeout=30s"]);
    await expect(kubectl(["get", "computeendpoint", "nowhere", "-n", h.namespace])).rejects.toThrow(
      /NotFound/,
    );
  });

  it("a revoked operator key stops every resource's requests at once; a new key in the Secret wakes them", async () => {
    const operatorKey = await h.platform.createApiKey("operator-key");
    await setOperatorKey(operatorKey.key);
    await h.start();
    const names = ["key-a", "key-b", "key-c"];
    const branches = ["br-feature", "br-dev", "br-staging"];
    await Promise.all(
      names.map((n, i) => h.apply(endpoint(n, { branchId: branches[i], type: "read_only" }))),
    );
    await Promise.all(names.map((n) => readyWith(n)));

    await h.platform.revokeApiKey(operatorKey.id);
    const refused = () => h.emulator.requestLog.latest().filter((e) => e.status === 401).length;
    const before = refused();
    // Each resource now has a change to make, so each would call the platform.
    await Promise.all(
      names.map((n) =>
        h.apply(
          endpoint(n, { branchId: branches[names.indexOf(n)], type: "read_only", computeUnits: { min: 2 } }),
        ),
      ),
    );
    await Promise.all(
      names.map((n) =>
        eventually(
          async () => (condition(await resource(n), "Ready")?.reason === "Unauthorized" ? true : undefined),
          {
            what: `${n} Unauthorized`,
          },
        ),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    // At most the one wave of requests already in flight when the first refusal came back.
    expect(refused() - before).toBeLessThanOrEqual(names.length);

    await setOperatorKey(h.emulator.bootstrapKey);
    await Promise.all(names.map((n) => readyWith(n, (o) => o.status?.computeUnits?.min === 2)));
  });

  it("a create the platform refuses in its current state (422) backs off from seconds and converges once it clears", async () => {
    const creates = () =>
      h.emulator.requestLog.latest().filter((e) => e.route === "POST /projects/:project_id/endpoints").length;
    const before = creates();
    h.emulator.faults.set({ requests: [{ route: "POST /projects/:project_id/endpoints", status: 422 }] });
    await h.apply(endpoint("refused", { branchId: "br-feature" }));
    await eventually(
      async () => {
        const o = await resource("refused");
        return condition(o, "Synced")?.reason === "RefusedInCurrentState" ? o : undefined;
      },
      { what: "RefusedInCurrentState" },
    );
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    const tried = creates() - before;
    h.emulator.faults.clear();
    expect(tried).toBeGreaterThan(0);
    expect(tried).toBeLessThanOrEqual(4);
    // Once it clears, it converges with no spec change.
    const obj = await readyWith("refused", undefined, 90_000);
    expect(obj.status?.branchId).toBe("br-feature");
    await kubectl(["delete", "cep", "refused", "-n", h.namespace]);
  });
});
