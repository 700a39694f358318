// The operator dies (a process of its own, killed while the API proxy holds its
// status write), the platform loses answers or refuses, endpoints vanish:
// afterwards there is exactly one endpoint per resource, and a refused spec
// costs no further API calls until it changes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { eventsOf, eventually, kubectl } from "../support/kube.ts";
import { startCrashRig, type CrashRig } from "../support/crash-rig.ts";
import { ownerMarkIn } from "../support/marks.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { condition, endpoint, factory, reader } from "./scenario.ts";

let h: OperatorHarness;
/** Operator processes killed from outside, against the same emulator, each scenario in a namespace of its own. */
let rig: CrashRig;
const { resource, readyWith } = reader(() => h);
const readyReason = (obj: ComputeEndpointObject) => condition(obj, "Ready");

/** POSTs to the endpoints route that reached the emulator. */
function endpointCreates(): number {
  return h.emulator.requestLog.latest().filter((e) => e.route === "POST /projects/:project_id/endpoints")
    .length;
}

beforeAll(async () => {
  h = await startOperatorHarness(factory, { prefix: "cep-recovery" });
  rig = await startCrashRig({ url: h.emulator.url, bootstrapKey: h.emulator.bootstrapKey });
});

afterAll(async () => {
  await rig?.close();
  await h?.stop();
});

describe("ComputeEndpoint recovery", () => {
  it("killed between the platform's create and the status write: exactly one endpoint, Ready", async () => {
    // From outside: the API proxy holds the status write that would record the new endpoint,
    // and the operator process is killed while it is held.
    const s = await rig.scenario("cep-crash");
    const status = new RegExp(`/namespaces/${s.namespace}/computeendpoints/survivor/status$`);
    const recording = rig.proxy.arm({ method: "PATCH", path: status, body: /"endpointId"/, action: "hold" });
    await s.start();
    const before = endpointCreates();
    await kubectl(["apply", "-n", s.namespace, "-f", "-"], {
      input: JSON.stringify(endpoint("survivor", { branchId: "br-dev" })),
    });
    await recording.waitForHit("the status write after the create");
    await s.kill();
    rig.proxy.reset();
    const get = async () =>
      JSON.parse(
        await kubectl(["get", "computeendpoint", "survivor", "-n", s.namespace, "-o", "json"]),
      ) as ComputeEndpointObject;
    const atKill = await get();
    const mark = await ownerMarkIn("ComputeEndpoint", s.namespace, "survivor");
    const named = async () => (await h.platform.listEndpoints("proj-alpha")).filter((e) => e.name === mark);
    expect(atKill.status?.endpointId).toBeUndefined();
    expect(await named()).toHaveLength(1); // the platform made it; only the operator's record is missing
    expect(endpointCreates() - before).toBe(1);

    await s.start();
    const obj = await eventually(
      async () => {
        const o = await get();
        const c = readyReason(o);
        return c?.status === "True" && c.observedGeneration === o.metadata.generation ? o : undefined;
      },
      { what: "survivor Ready", intervalMs: 200 },
    );
    const after = await named();
    expect(after).toHaveLength(1);
    expect(obj.status?.endpointId).toBe(after[0]?.id);
    expect(endpointCreates() - before).toBe(1); // found by its owner mark, never created twice
    await s.kill();
  });

  it("a lost create response is resolved by observing, never by creating twice", async () => {
    await h.start();
    const before = endpointCreates();
    h.emulator.faults.set({
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", lose_response: true, times: 1 }],
    });
    await h.apply(endpoint("lost-answer", { branchId: "br-staging" }));
    await readyWith("lost-answer");
    h.emulator.faults.clear();
    const mark = await ownerMarkIn("ComputeEndpoint", h.namespace, "lost-answer");
    const named = (await h.platform.listEndpoints("proj-alpha")).filter((e) => e.name === mark);
    expect(named).toHaveLength(1);
    expect(endpointCreates() - before).toBe(1);
  });

  it("an endpoint deleted outside the operator is created again", async () => {
    const first = await resource("lost-answer");
    // Someone deletes it in the console; like any client, retried while the project is locked (423).
    await eventually(
      () =>
        h.platform.deleteEndpoint("proj-alpha", first.status?.endpointId ?? "").then(
          () => true,
          () => undefined,
        ),
      { what: "the outside delete" },
    );
    await kubectl(["annotate", "cep", "lost-answer", "-n", h.namespace, "neoncloud.dev/observeInterval=1s"]);
    const again = await readyWith("lost-answer", (o) => o.status?.endpointId !== first.status?.endpointId);
    expect(again.status?.currentState).toBeDefined();
  });

  it("a spec the platform refuses is terminal: InvalidSpec, and no more calls until the spec changes", async () => {
    h.emulator.faults.set({
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", status: 400 }],
    });
    await h.apply(endpoint("refused", { branchId: "br-feature", computeUnits: { min: 2 } }));
    const refused = await eventually(
      async () => {
        const obj = await resource("refused");
        return readyReason(obj)?.reason === "InvalidSpec" ? obj : undefined;
      },
      { what: "InvalidSpec" },
    );
    expect(refused.status?.conditions?.find((c) => c.type === "Stalled")?.status).toBe("True");
    const attempts = endpointCreates();
    // Requeues, resyncs and status writes must not bring the create back.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(endpointCreates()).toBe(attempts);

    h.emulator.faults.clear();
    await h.apply(endpoint("refused", { branchId: "br-feature", computeUnits: { min: 1 } }));
    await readyWith("refused");
    expect(endpointCreates()).toBe(attempts + 1);
  });

  it("a change the current state forbids (422) is retried until it goes through", async () => {
    // As right after a branch is created ("branch not ready yet"): not a verdict on the spec.
    h.emulator.faults.set({
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", status: 422, times: 3 }],
    });
    await h.apply(endpoint("not-yet", { branchId: "br-feature", type: "read_only" }));
    const obj = await readyWith("not-yet");
    expect(obj.status?.endpointId).toBeDefined();
    h.emulator.faults.clear();
  });

  it("a failed platform operation is reported with its failure count, then retried", async () => {
    h.emulator.faults.set({
      operations: [{ action: "start_compute", times: 1, failures: 1, then: "error", retry_delay_ms: 50 }],
    });
    await h.apply(endpoint("unlucky", { branchId: "br-feature", type: "read_only" }));
    // The retry follows within milliseconds, so the Warning event is the durable record.
    const warning = await eventually(
      async () => {
        const items = await eventsOf(h.namespace, "involvedObject.name=unlucky,reason=OperationFailed");
        return items[0];
      },
      { what: "the OperationFailed event" },
    );
    expect(warning.message ?? warning.note).toMatch(/start_compute .* failed \(failures_count 1\)/);
    h.emulator.faults.clear();
    // The retry starts the endpoint that never started, and it becomes Ready.
    const obj = await readyWith("unlucky");
    expect(obj.status?.currentState).toBe("active");
  });

  it("waits for missing credentials, and goes on as soon as the Secret appears", async () => {
    await h.apply(
      endpoint("own-key", {
        branchId: "br-feature",
        type: "read_only",
        credentials: { secretName: "team-key" },
      }),
    );
    const waiting = await eventually(
      async () => {
        const obj = await resource("own-key");
        return readyReason(obj)?.reason === "CredentialsNotFound" ? obj : undefined;
      },
      { what: "CredentialsNotFound" },
    );
    expect(readyReason(waiting)?.message).toContain("team-key");
    await applyCredentialsSecret(h.namespace, "team-key", h.emulator.bootstrapKey);
    // Well before the 60 s re-check: the Secret's watch event brings it back.
    await eventually(
      async () => {
        const obj = await resource("own-key");
        return readyReason(obj)?.status === "True" ? obj : undefined;
      },
      { what: "Ready once the Secret exists", timeoutMs: 20_000 },
    );
  });

  it("reads as waiting while the project refuses changes (423), and applies the change once it lifts", async () => {
    h.emulator.faults.set({
      requests: [{ method: "PATCH", route: "/projects/:project_id/endpoints/:endpoint_id", status: 423 }],
    });
    await h.apply(
      endpoint("own-key", {
        branchId: "br-feature",
        type: "read_only",
        credentials: { secretName: "team-key" },
        computeUnits: { min: 2 },
      }),
    );
    await eventually(
      async () => {
        const obj = await resource("own-key");
        return readyReason(obj)?.reason === "WaitingForProject" ? obj : undefined;
      },
      { what: "WaitingForProject" },
    );
    h.emulator.faults.clear();
    const done = await readyWith("own-key", (o) => o.status?.computeUnits?.min === 2);
    expect(done.status?.computeUnits).toEqual({ min: 2, max: 2 });
  });
});
