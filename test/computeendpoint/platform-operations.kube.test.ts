// The platform as it really behaves: a failed operation it retries by itself, one that ends in
// error, a project locked by someone else's change, and a DELETE of an endpoint already gone
// answered 204. The resource reads as waiting where it waits, and fails only where the change did.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import { PlatformClient } from "../../src/platform/index.ts";
import type { Condition, Controller, KubeObject } from "../../src/runtime/index.ts";
import { eventsOf, eventually, kubectl } from "../support/kube.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { computeEndpointController } from "../../src/controllers/registry.ts";

let h: OperatorHarness;
const factory = (o: Parameters<typeof computeEndpointController>[0]) =>
  computeEndpointController(o) as unknown as Controller<KubeObject>;

function endpoint(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name },
    spec: { projectId: "proj-alpha", ...spec },
  };
}

const resource = (name: string) => h.get<ComputeEndpointObject>("computeendpoint", name);
const condition = (obj: ComputeEndpointObject, type: string): Condition | undefined =>
  obj.status?.conditions?.find((c) => c.type === type);

/** Every Ready reason (and message) the resource showed until it became Ready. */
async function watchUntilReady(name: string): Promise<{ seen: Condition[]; obj: ComputeEndpointObject }> {
  const seen: Condition[] = [];
  const obj = await eventually(
    async () => {
      const current = await resource(name).catch(() => undefined);
      const ready = current && condition(current, "Ready");
      const synced = current && condition(current, "Synced");
      if (ready && seen.at(-1)?.message !== ready.message) seen.push(ready);
      if (synced?.status === "False") seen.push(synced);
      return ready?.status === "True" && ready.observedGeneration === current?.metadata.generation
        ? current
        : undefined;
    },
    { what: `${name} Ready`, intervalMs: 50, timeoutMs: 60_000 },
  );
  return { seen, obj };
}

/** The Warning events recorded for a resource, by reason. */
async function warnings(name: string): Promise<string[]> {
  const recorded = await eventsOf(h.namespace, `involvedObject.name=${name},type=Warning`);
  return recorded.map((e) => e.reason ?? "");
}

const requests = (method: string, pathPart: string) =>
  h.emulator.requestLog.latest().filter((e) => e.method === method && e.path.includes(pathPart));

/** A client of someone else (a script, the console): it knows nothing of the operator's gate. */
function otherActor(): PlatformClient {
  return new PlatformClient({
    baseUrl: h.emulator.url,
    apiKey: h.emulator.bootstrapKey,
    mutationGate: false,
  });
}

beforeAll(async () => {
  // Operations of a second, the platform's project-wide lock (the emulator's default).
  h = await startOperatorHarness(factory, {
    prefix: "cep-platform",
    emulator: { operationDurationMs: 1_000 },
  });
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("ComputeEndpoint against the platform's operations", () => {
  it("waits while the platform retries a failed operation, and is Ready when its retry finishes, with no second change sent", async () => {
    h.emulator.faults.set({
      operations: [
        { action: "start_compute", times: 1, failures: 2, then: "finished", retry_delay_ms: 1_500 },
      ],
    });
    await h.apply(endpoint("retried", { branchId: "br-dev", type: "read_write" }));
    const { seen, obj } = await watchUntilReady("retried");
    h.emulator.faults.clear();

    const retrying = seen.filter((c) => c.reason === "OperationRetrying");
    expect(retrying.length).toBeGreaterThan(0);
    expect(retrying[0]!.message).toMatch(/start_compute .* failed \(failures_count 1\); retry at \d{4}-/);
    expect(seen.map((c) => c.reason)).not.toContain("OperationFailed");
    expect(obj.status?.operations?.[0]).toMatchObject({
      action: "start_compute",
      status: "finished",
      failuresCount: 2,
    });
    // One create, and nothing sent to the endpoint since: the platform did the retrying.
    expect(
      requests("POST", "/projects/proj-alpha/endpoints").filter((e) => e.route.endsWith("/endpoints")),
    ).toHaveLength(1);
    const endpointId = obj.status!.endpointId!;
    expect(requests("POST", endpointId)).toHaveLength(0);
    expect(requests("PATCH", endpointId)).toHaveLength(0);
    expect(await warnings("retried")).toEqual([]);
  });

  it("reports an operation that ends in error as OperationFailed, then tries the change again", async () => {
    h.emulator.faults.set({
      operations: [{ action: "start_compute", times: 1, failures: 1, then: "error", retry_delay_ms: 200 }],
    });
    await h.apply(endpoint("doomed", { branchId: "br-staging", type: "read_write" }));
    const failed = await eventually(
      async () => (await warnings("doomed")).includes("OperationFailed") || undefined,
      {
        what: "the OperationFailed event",
      },
    );
    expect(failed).toBe(true);
    h.emulator.faults.clear();
    const { obj } = await watchUntilReady("doomed");
    expect(obj.status?.currentState).toBe("active");
    // The endpoint that never started was started again: a second change, sent by the operator.
    expect(requests("POST", `${obj.status!.endpointId!}/start`).length).toBeGreaterThan(0);
  });

  it("waits out another actor's change (423) without counting a failure, and converges", async () => {
    // A fresh operator: its gate knows nothing of what runs in the project.
    await h.start();
    const other = otherActor();
    try {
      const target = (await other.listEndpoints("proj-alpha")).find((e) => e.branchId === "br-dev")!;
      // Restart: two operations, two seconds in all, holding the project.
      const restarted = await other.restartEndpoint("proj-alpha", target.id);
      const lockedBefore = requests("POST", "/projects/proj-alpha/endpoints").filter(
        (e) => e.status === 423,
      ).length;
      await h.apply(endpoint("patient", { branchId: "br-feature", type: "read_write" }));
      const { seen } = await watchUntilReady("patient");
      await other.waitForOperations("proj-alpha", restarted.operations, {
        pollIntervalMs: 100,
        timeoutMs: 10_000,
      });

      const locked = requests("POST", "/projects/proj-alpha/endpoints").filter(
        (e) => e.status === 423,
      ).length;
      expect(locked - lockedBefore).toBeGreaterThan(0);
      expect(seen.map((c) => c.reason)).toContain("WaitingForProject");
      // Waiting is no failure: Synced never went False, no Warning event, no failure in the log.
      expect(seen.filter((c) => c.status === "False" && c.type === "Synced")).toEqual([]);
      expect(await warnings("patient")).toEqual([]);
      const failures = h.logs.lines.filter((l) => l.includes("/patient") && l.includes("reconcile failed"));
      expect(failures).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it("a create whose project is busy reads as waiting for the project, and goes when its turn comes", async () => {
    const before = requests("POST", "/projects/proj-alpha/endpoints").length;
    // Two creates in one project at once: one goes, the other is handed back until the project's
    // lock frees (rather than holding a worker asleep until then), and says so in its status.
    const [first, second] = await Promise.all(
      ["in-line-a", "in-line-b"].map(async (name, i) => {
        await h.apply(endpoint(name, { branchId: i === 0 ? "br-staging" : "br-feature", type: "read_only" }));
        return watchUntilReady(name);
      }),
    );
    const reasons = [first!, second!].map(({ seen }) => seen.map((c) => c.reason));
    const waited = reasons.filter((r) => r.includes("WaitingForProject"));
    expect(waited.length).toBeGreaterThan(0);
    for (const r of waited) expect(r.indexOf("WaitingForProject")).toBeLessThan(r.indexOf("Creating"));
    const created = requests("POST", "/projects/proj-alpha/endpoints")
      .slice(before)
      .filter((e) => e.status === 201);
    expect(created.length).toBe(2);
    // Waiting for a turn is no failure.
    for (const { seen } of [first!, second!]) {
      expect(seen.filter((c) => c.status === "False" && c.type === "Synced")).toEqual([]);
    }
    expect([...(await warnings("in-line-a")), ...(await warnings("in-line-b"))]).toEqual([]);
  });

  it("deletes a resource whose endpoint was removed behind the operator's back (204)", async () => {
    await h.apply(endpoint("vanishing", { branchId: "br-dev", type: "read_only" }));
    const { obj } = await watchUntilReady("vanishing");
    const endpointId = obj.status!.endpointId!;
    const other = otherActor();
    try {
      const deleted = await other.deleteEndpoint("proj-alpha", endpointId);
      await other.waitForOperations("proj-alpha", deleted?.operations ?? [], {
        pollIntervalMs: 100,
        timeoutMs: 10_000,
      });
    } finally {
      await other.close();
    }
    await kubectl(["delete", "computeendpoint", "vanishing", "-n", h.namespace, "--wait=false"]);
    await eventually(
      async () => ((await resource("vanishing").catch(() => undefined)) === undefined ? true : undefined),
      { what: "the resource gone" },
    );
    // The operator's DELETE met an endpoint already gone: 204, done.
    const deletes = requests("DELETE", endpointId);
    expect(deletes.map((e) => e.status)).toEqual([200, 204]);
    expect(await warnings("vanishing")).toEqual([]);
  });
});
