// The operator killed (SIGKILL, a process of its own) around a snapshot's create, and the platform
// losing the create's answer. The Snapshot records the name it sends before it sends it, so a
// fresh operator finds a snapshot taken before the crash by that name instead of taking another:
// afterwards the resource is Ready and the project holds exactly one snapshot of it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotObject } from "../../src/controllers/snapshot/index.ts";
import { KubeClient } from "../../src/runtime/index.ts";
import { startCrashRig, type CrashRig, type RigScenario } from "../support/crash-rig.ts";
import { adminKubeConfig, eventually, kubectl } from "../support/kube.ts";
import { ownerMarkIn } from "../support/marks.ts";
import { startPlatform, type TestPlatform } from "../support/platform/platform.ts";

let platform: TestPlatform;
let rig: CrashRig;
let kube: KubeClient;
let main: string;
const snapshots = { group: "neoncloud.dev", version: "v1alpha1", plural: "snapshots", kind: "Snapshot" };
const project = "snapshot-crash";

beforeAll(async () => {
  platform = await startPlatform({
    operationDurationMs: 150,
    seed: { projects: [{ id: project, name: "snapshots", primary_branch: "main" }] },
  });
  rig = await startCrashRig({ url: platform.emulator.url, bootstrapKey: platform.emulator.bootstrapKey });
  kube = new KubeClient(adminKubeConfig());
  main = (await platform.client().listBranches(project)).find((b) => b.default)!.id;
});

afterAll(async () => {
  await rig?.close();
  await platform?.close();
});

async function apply(ns: string): Promise<void> {
  await kubectl(["apply", "-n", ns, "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Snapshot",
      metadata: { name: "nightly" },
      spec: { projectId: project, branchId: main, ttl: "24h" },
    }),
  });
}

/** The project's snapshots of the resource (by the name it sends: its owner mark). */
async function snapshotsOf(ns: string): Promise<string[]> {
  const name = await ownerMarkIn("Snapshot", ns, "nightly");
  return (await platform.client().listSnapshots(project)).filter((s) => s.name === name).map((s) => s.id);
}

/** Exactly one snapshot of the resource, the one its status names, and the resource Ready. */
async function expectExactlyOne(s: RigScenario): Promise<void> {
  const obj = await eventually(
    async () => {
      const o = await kube.get<SnapshotObject>(snapshots, s.namespace, "nightly");
      const ready = o?.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === "True" && ready.observedGeneration === o?.metadata.generation ? o : undefined;
    },
    { what: `Snapshot ${s.namespace}/nightly Ready`, timeoutMs: 60_000 },
  );
  expect(await snapshotsOf(s.namespace)).toEqual([obj.status?.snapshotId]);
  await s.kill();
}

describe("killed while taking a snapshot", () => {
  it("killed after the create, before its answer is recorded: exactly one snapshot afterwards", async () => {
    const s = await rig.killedAt("snap-crash", {
      name: "snapshotRecorded",
      rule: (ns) => ({
        method: "PATCH",
        path: new RegExp(`/namespaces/${ns}/snapshots/nightly/status$`),
        body: /"snapshotId":"/,
      }),
      apply,
      onPlatform: snapshotsOf,
      before: 1,
      recorded: async (ns) => (await kube.get<SnapshotObject>(snapshots, ns, "nightly"))?.status?.snapshotId,
    });
    await expectExactlyOne(s);
  });

  it("the platform loses the create's answer: the snapshot is found again by name, not taken twice", async () => {
    const s = await rig.scenario("snap-lost");
    await platform.setFaults({
      requests: [
        {
          method: "POST",
          route: "/projects/:project_id/branches/:branch_id/snapshot",
          lose_response: true,
          times: 1,
        },
      ],
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
