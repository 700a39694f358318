// The operator killed (SIGKILL, a process of its own) around a branch create, and the platform
// losing a create response. Each moment is produced from outside: the API proxy holds the
// operator's next Kubernetes request at that step, the test checks what the platform shows, then
// kills the process; a fresh one must finish. Afterwards the resource is Ready and the project
// holds exactly one branch of it (found again by the name derived from the resource's UID). With a
// ComputeEndpoint naming the Branch, whose endpoint the branch's create makes in the same request:
// one endpoint, taken over by that ComputeEndpoint, and no endpoint create sent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BranchObject } from "../../src/controllers/branch/index.ts";
import { ownerMarkIn } from "../support/marks.ts";
import { KubeClient, type KubeObject } from "../../src/runtime/index.ts";
import type { ProxyRule } from "../support/api-proxy.ts";
import { startCrashRig, type CrashRig, type RigScenario } from "../support/crash-rig.ts";
import { adminKubeConfig, eventually, kubectl } from "../support/kube.ts";
import { startPlatform, type TestPlatform } from "../support/platform/platform.ts";

let platform: TestPlatform;
let rig: CrashRig;
let kube: KubeClient;
const branches = { group: "neoncloud.dev", version: "v1alpha1", plural: "branches", kind: "Branch" };
const project = "crash-project";

beforeAll(async () => {
  platform = await startPlatform({
    operationDurationMs: 150,
    seed: { projects: [{ id: project, name: "crash", branches: [{ id: "br-base", name: "base" }] }] },
  });
  rig = await startCrashRig({ url: platform.emulator.url, bootstrapKey: platform.emulator.bootstrapKey });
  kube = new KubeClient(adminKubeConfig());
});

afterAll(async () => {
  await rig?.close();
  await platform?.close();
});

async function apply(ns: string): Promise<void> {
  await kubectl(["apply", "-n", ns, "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Branch",
      metadata: { name: "preview" },
      spec: { projectId: project, parent: { branchName: "base" } },
    }),
  });
}

/** The platform's branches of the resource (by its name: the resource's owner mark). */
async function branchesOf(ns: string): Promise<string[]> {
  const name = await ownerMarkIn("Branch", ns, "preview");
  const list = await platform.client().listBranches(project);
  return list.filter((b) => b.name === name).map((b) => b.id);
}

async function settled(ns: string): Promise<BranchObject> {
  return eventually(
    async () => {
      const obj = await kube.get<BranchObject>(branches, ns, "preview");
      const ready = obj?.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === "True" && ready.observedGeneration === obj?.metadata.generation
        ? obj
        : undefined;
    },
    { what: `Branch ${ns}/preview Ready`, timeoutMs: 60_000 },
  );
}

/** Exactly one branch of the resource, the one its status names, ready. */
async function expectExactlyOne(s: RigScenario): Promise<void> {
  const obj = await settled(s.namespace);
  const ids = await branchesOf(s.namespace);
  expect(ids).toEqual([obj.status?.branchId]);
  expect(obj.status?.currentState).toBe("ready");
  await s.kill();
}

describe("killed while creating a branch", () => {
  const step = (ns: string) => {
    const object = new RegExp(`/namespaces/${ns}/branches/preview$`);
    const status = new RegExp(`/namespaces/${ns}/branches/preview/status$`);
    return {
      /** The finalizer added before anything is created. */
      finalizerAdded: { method: "PATCH", path: object },
      /** The status write recording the created branch and its operation. */
      branchRecorded: { method: "PATCH", path: status, body: /"branchId":"/ },
    } satisfies Record<string, Omit<ProxyRule, "action">>;
  };

  it.each([
    { at: "before the create (finalizer held)", hold: "finalizerAdded" as const, before: 0 },
    { at: "after the create, before its status is written", hold: "branchRecorded" as const, before: 1 },
  ])("killed $at: exactly one branch afterwards", async ({ hold, before }) => {
    const s = await rig.killedAt("br-crash", {
      name: hold,
      rule: (ns) => step(ns)[hold],
      apply,
      onPlatform: branchesOf,
      before,
      recorded: async (ns) => (await kube.get<BranchObject>(branches, ns, "preview"))?.status?.branchId,
    });
    await expectExactlyOne(s);
  });

  it("the platform loses the create response: the branch is found again by name, not created twice", async () => {
    const s = await rig.scenario("br-lost");
    await platform.setFaults({
      requests: [{ method: "POST", route: "/projects/:project_id/branches", lose_response: true, times: 1 }],
    });
    try {
      await s.start();
      await apply(s.namespace);
      await expectExactlyOne(s);
    } finally {
      await platform.setFaults({ requests: [] });
    }
  });

  describe("with the ComputeEndpoint naming it, whose endpoint the create makes too", () => {
    const endpoints = {
      group: "neoncloud.dev",
      version: "v1alpha1",
      plural: "computeendpoints",
      kind: "ComputeEndpoint",
    };
    type Ce = KubeObject & {
      status?: { endpointId?: string; conditions?: { type: string; status: string; reason: string }[] };
    };
    const endpointCreates = () =>
      Object.values(
        platform.emulator.requestLog.counters().by_route["POST /projects/:project_id/endpoints"] ?? {},
      ).reduce((a, b) => a + b, 0);

    /** The ComputeEndpoint first, seen waiting for its Branch (so the operator knows it), then the Branch. */
    async function applyBoth(ns: string): Promise<void> {
      await kubectl(["apply", "-n", ns, "-f", "-"], {
        input: JSON.stringify({
          apiVersion: "neoncloud.dev/v1alpha1",
          kind: "ComputeEndpoint",
          metadata: { name: "preview" },
          spec: { projectId: project, branchRef: { name: "preview" } },
        }),
      });
      await eventually(
        async () => {
          const obj = await kube.get<Ce>(endpoints, ns, "preview");
          return obj?.status?.conditions?.some((c) => c.reason === "WaitingForReference") ? true : undefined;
        },
        { what: "the ComputeEndpoint waiting for its Branch", timeoutMs: 30_000 },
      );
      await apply(ns);
    }

    /** One branch, one endpoint on it, the ComputeEndpoint's, Ready; no endpoint create sent. */
    async function expectOneOfEach(s: RigScenario, creates: number): Promise<void> {
      const branch = await settled(s.namespace);
      expect(await branchesOf(s.namespace)).toEqual([branch.status?.branchId]);
      const ce = await eventually(
        async () => {
          const obj = await kube.get<Ce>(endpoints, s.namespace, "preview");
          const ready = obj?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
          return ready ? obj : undefined;
        },
        { what: "the ComputeEndpoint Ready", timeoutMs: 60_000 },
      );
      const onBranch = (await platform.client().listEndpoints(project)).filter(
        (e) => e.branchId === branch.status?.branchId,
      );
      expect(onBranch.map((e) => e.id)).toEqual([ce?.status?.endpointId]);
      expect(branch.status?.endpoint).toEqual({ name: "preview", uid: ce?.metadata.uid });
      expect(endpointCreates()).toBe(creates);
      await s.kill();
    }

    it("killed after the create, before its status is written: one branch, one endpoint, the ComputeEndpoint's", async () => {
      const creates = endpointCreates();
      const s = await rig.killedAt("br-ep-crash", {
        name: "branchRecorded",
        rule: (ns) => step(ns).branchRecorded,
        apply: applyBoth,
        onPlatform: branchesOf,
        before: 1,
        recorded: async (ns) => (await kube.get<BranchObject>(branches, ns, "preview"))?.status?.branchId,
      });
      await expectOneOfEach(s, creates);
    });

    it("the platform loses the create response: the branch and its endpoint are found again, neither made twice", async () => {
      const s = await rig.scenario("br-ep-lost");
      await s.start();
      const creates = endpointCreates();
      await platform.setFaults({
        requests: [
          { method: "POST", route: "/projects/:project_id/branches", lose_response: true, times: 1 },
        ],
      });
      try {
        await applyBoth(s.namespace);
        await expectOneOfEach(s, creates);
      } finally {
        await platform.setFaults({ requests: [] });
      }
    });
  });
});
