// A user applies ComputeEndpoints with kubectl and gets endpoints on the
// platform (the emulator, over HTTP), kept as declared.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/platform/index.ts";
import type { KubeObject } from "../../src/runtime/index.ts";
import { eventsOf, eventually, kubectl } from "../support/kube.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { condition, endpoint, factory, reader } from "./scenario.ts";

let h: OperatorHarness;
const { resource, readyWith } = reader(() => h);

/** Waits until the resource is Ready for its current generation and returns it. */
const ready = (name: string, timeoutMs = 30_000) => readyWith(name, undefined, timeoutMs);

async function platformEndpoint(id: string): Promise<Endpoint | undefined> {
  return (await h.platform.listEndpoints("proj-alpha")).find((e) => e.id === id);
}

async function events(name: string): Promise<string> {
  const recorded = await eventsOf(h.namespace, `involvedObject.name=${name}`);
  return recorded.map((e) => e.message ?? e.note ?? "").join("\n");
}

beforeAll(async () => {
  h = await startOperatorHarness(factory, { prefix: "cep" });
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("ComputeEndpoint", () => {
  it("creates a read-write endpoint and reports it Ready with its host, size and operations", async () => {
    await h.apply(endpoint("web", { branchId: "br-dev", computeUnits: { min: 0.5, max: 2 } }));
    await kubectl([
      "wait",
      "--for=condition=Ready",
      "computeendpoint/web",
      "-n",
      h.namespace,
      "--timeout=60s",
    ]);
    const obj = await resource("web");
    const id = obj.status?.endpointId ?? "";
    const ep = await platformEndpoint(id);
    expect(ep?.branchId).toBe("br-dev");
    expect(ep?.type).toBe("read_write");
    expect([ep?.autoscalingLimitMinCu, ep?.autoscalingLimitMaxCu]).toEqual([0.5, 2]);
    expect(obj.status?.host).toBe(ep?.host);
    expect(obj.status?.pooledHost).toBe(ep?.host.replace(id, `${id}-pooler`));
    expect(obj.status?.computeUnits).toEqual({ min: 0.5, max: 2 });
    expect(obj.status?.maxConnections).toBe(225);
    expect(obj.status?.currentState).toBe("active");
    expect(obj.status?.operations?.map((o) => [o.action, o.status])).toContainEqual([
      "start_compute",
      "finished",
    ]);
    // kubectl get shows the printer columns.
    const table = await kubectl(["get", "cep", "web", "-n", h.namespace]);
    expect(table).toMatch(/PROJECT\s+BRANCH\s+TYPE\s+STATE\s+HOST\s+READY\s+AGE/);
    expect(table).toMatch(/proj-alpha\s+br-dev\s+read_write\s+active\s+\S+\s+True/);
  });

  it("runs a read replica beside the read-write endpoint of the same branch", async () => {
    await h.apply(endpoint("web-replica", { branchId: "br-dev", type: "read_only" }));
    const obj = await ready("web-replica");
    const onBranch = (await h.platform.listEndpoints("proj-alpha")).filter((e) => e.branchId === "br-dev");
    expect(onBranch.map((e) => e.type).sort()).toEqual(["read_only", "read_write"]);
    expect(onBranch.map((e) => e.id)).toContain(obj.status?.endpointId);
  });

  it("applies a size change with one PATCH and records that it restarts the endpoint", async () => {
    await h.apply(endpoint("web", { branchId: "br-dev", computeUnits: { min: 1, max: 4 } }));
    const obj = await ready("web");
    expect(obj.status?.computeUnits).toEqual({ min: 1, max: 4 });
    expect(obj.status?.maxConnections).toBe(450);
    expect((await platformEndpoint(obj.status?.endpointId ?? ""))?.autoscalingLimitMaxCu).toBe(4);
    expect(obj.status?.operations?.map((o) => o.action)).toContain("apply_config");
    expect(await events("web")).toContain("restarts the endpoint");
  });

  it("moves an endpoint to another branch", async () => {
    await h.apply(endpoint("mover", { branchId: "br-staging" }));
    const before = await ready("mover");
    await h.apply(endpoint("mover", { branchId: "br-feature" }));
    const after = await eventually(
      async () => {
        const obj = await ready("mover");
        return obj.status?.branchId === "br-feature" ? obj : undefined;
      },
      { what: "the move" },
    );
    expect(after.status?.endpointId).toBe(before.status?.endpointId);
    expect((await platformEndpoint(after.status?.endpointId ?? ""))?.branchId).toBe("br-feature");
  });

  it("suspends when spec.suspended is true and starts when it turns false", async () => {
    await h.apply(endpoint("mover", { branchId: "br-feature", suspended: true }));
    const suspended = await eventually(
      async () => {
        const obj = await ready("mover");
        return obj.status?.currentState === "idle" ? obj : undefined;
      },
      { what: "idle" },
    );
    expect((await platformEndpoint(suspended.status?.endpointId ?? ""))?.currentState).toBe("idle");
    await h.apply(endpoint("mover", { branchId: "br-feature", suspended: false }));
    await eventually(
      async () => {
        const obj = await ready("mover");
        return obj.status?.currentState === "active" ? obj : undefined;
      },
      { what: "active again" },
    );
  });

  it("restarts the endpoint when the restartedAt annotation gets a new value", async () => {
    await h.apply(
      endpoint(
        "web",
        { branchId: "br-dev", computeUnits: { min: 1, max: 4 } },
        {
          "neoncloud.dev/restartedAt": "2026-11-21T10:00:00Z",
        },
      ),
    );
    const obj = await eventually(
      async () => {
        const o = await ready("web");
        return o.status?.restartedAt === "2026-11-21T10:00:00Z" ? o : undefined;
      },
      { what: "the restart" },
    );
    const actions = obj.status?.operations?.map((o) => o.action) ?? [];
    expect(actions).toEqual(expect.arrayContaining(["suspend_compute", "start_compute"]));
  });

  it("publishes connection details to a ConfigMap it owns", async () => {
    await h.apply(
      endpoint(
        "web",
        { branchId: "br-dev", computeUnits: { min: 1, max: 4 }, connectionConfigMapName: "web-db" },
        {
          "neoncloud.dev/restartedAt": "2026-11-21T10:00:00Z",
        },
      ),
    );
    const obj = await ready("web");
    const cm = await eventually(
      async () => {
        const out = await kubectl([
          "get",
          "configmap",
          "web-db",
          "-n",
          h.namespace,
          "--ignore-not-found",
          "-o",
          "json",
        ]);
        return out.trim()
          ? (JSON.parse(out) as { data: Record<string, string>; metadata: KubeObject["metadata"] })
          : undefined;
      },
      { what: "the ConfigMap" },
    );
    expect(cm.data).toMatchObject({
      host: obj.status?.host,
      pooledHost: obj.status?.pooledHost,
      port: "5432",
      endpointId: obj.status?.endpointId,
      projectId: "proj-alpha",
      branchId: "br-dev",
      sslmode: "require",
    });
    expect(cm.metadata.ownerReferences?.[0]?.name).toBe("web");
  });

  it("repairs drift: a value changed outside is set back", async () => {
    await h.apply(
      endpoint(
        "drifty",
        { branchId: "br-staging", computeUnits: { min: 1 } },
        {
          "neoncloud.dev/observeInterval": "1s",
        },
      ),
    );
    const obj = await ready("drifty");
    const id = obj.status?.endpointId ?? "";
    await h.platform.updateEndpoint("proj-alpha", id, { autoscalingLimitMinCu: 2, autoscalingLimitMaxCu: 2 });
    await eventually(
      async () => {
        const ep = await platformEndpoint(id);
        return ep?.autoscalingLimitMinCu === 1 && ep.autoscalingLimitMaxCu === 1 ? true : undefined;
      },
      { what: "the size set back to 1 CU", timeoutMs: 30_000 },
    );
  });

  it("refuses a second resource claiming the read-write endpoint of the same branch", async () => {
    await h.apply(endpoint("claimant", { branchId: "br-dev" }));
    const obj = await eventually(
      async () => {
        const o = await resource("claimant");
        return condition(o, "Ready")?.reason === "BranchHasReadWriteEndpoint" ? o : undefined;
      },
      { what: "BranchHasReadWriteEndpoint" },
    );
    expect(condition(obj, "Ready")?.message).toContain("web");
    const readWrite = (await h.platform.listEndpoints("proj-alpha")).filter(
      (e) => e.branchId === "br-dev" && e.type === "read_write",
    );
    expect(readWrite).toHaveLength(1);
    await kubectl(["delete", "cep", "claimant", "-n", h.namespace]);
  });

  it("adopts an existing endpoint by id and, observe-only, never changes it", async () => {
    const testBranches = ["br-dev", "br-staging", "br-feature"];
    const primary = (await h.platform.listEndpoints("proj-alpha")).find(
      (e) => !testBranches.includes(e.branchId),
    );
    expect(primary).toBeDefined();
    await h.apply(
      endpoint("observer", {
        branchId: primary?.branchId,
        endpointId: primary?.id,
        managementPolicy: "ObserveOnly",
        computeUnits: { min: 8 },
      }),
    );
    const obj = await ready("observer");
    expect(condition(obj, "Ready")?.reason).toBe("Observed");
    expect(obj.status?.host).toBe(primary?.host);
    // The spec asks for 8 CU, but observe-only leaves the platform as it is.
    expect((await platformEndpoint(primary?.id ?? ""))?.autoscalingLimitMinCu).toBe(
      primary?.autoscalingLimitMinCu,
    );
  });

  it("deletes the platform endpoint with the resource, or leaves it with deletionPolicy Orphan", async () => {
    await h.apply(endpoint("kept", { branchId: "br-staging", type: "read_only", deletionPolicy: "Orphan" }));
    const kept = await ready("kept");
    await kubectl(["delete", "cep", "kept", "-n", h.namespace, "--timeout=60s"]);
    expect(await platformEndpoint(kept.status?.endpointId ?? "")).toBeDefined();

    const web = await resource("web-replica");
    await kubectl(["delete", "cep", "web-replica", "-n", h.namespace, "--timeout=60s"]);
    expect(await platformEndpoint(web.status?.endpointId ?? "")).toBeUndefined();
    // A deletion that went as it should is no failure: no Warning (a PATCH of the object gone, say).
    await new Promise((r) => setTimeout(r, 1_000));
    const warnings = await kubectl([
      "get",
      "events",
      "-n",
      h.namespace,
      "--field-selector",
      "type=Warning,involvedObject.name=web-replica",
      "-o",
      'jsonpath={range .items[*]}{.reason}: {.message}{"\\n"}{end}',
    ]);
    expect(warnings).toBe("");
  });
});
