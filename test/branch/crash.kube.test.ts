// The operator killed (SIGKILL, a process of its own) around a branch create, and the platform
// losing a create response. Each moment is produced from outside: the API proxy holds the
// operator's next Kubernetes request at that step, the test checks what the platform shows, then
// kills the process; a fresh one must finish. Afterwards the resource is Ready and the project
// holds exactly one branch of it (found again by the name derived from the resource's UID).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BranchObject } from "../../src/controllers/branch/index.ts";
import { ownerMarkIn } from "../support/marks.ts";
import { KubeClient } from "../../src/runtime/index.ts";
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
});
