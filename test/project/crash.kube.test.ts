// The operator killed (SIGKILL, a process of its own) around a project's create, and the platform
// losing the create's answer. Each moment is produced from outside: the API proxy holds the
// operator's next Kubernetes request at that step, the test checks what the platform shows, then
// kills the process; a fresh one must finish. Afterwards the Project is Ready and the account
// holds exactly one project of it: found again by the name the create was sent with (recorded
// before it was sent) and the owner mark on its default branch.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeClient } from "../../src/runtime/index.ts";
import type { ProxyRule } from "../support/api-proxy.ts";
import { startCrashRig, type CrashRig, type RigScenario } from "../support/crash-rig.ts";
import { adminKubeConfig, kubectl } from "../support/kube.ts";
import { ownerMarkIn } from "../support/marks.ts";
import { startPlatform, type TestPlatform } from "../support/platform/platform.ts";
import { until, type ProjectObject } from "./scenario.ts";

let platform: TestPlatform;
let rig: CrashRig;
let kube: KubeClient;
const projects = { group: "neoncloud.dev", version: "v1alpha1", plural: "projects", kind: "Project" };

beforeAll(async () => {
  platform = await startPlatform({ operationDurationMs: 150, seed: { projects: [] } });
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
      kind: "Project",
      metadata: { name: "tenant" },
      spec: { historyRetention: "1h" },
    }),
  });
}

/** The account's projects of the resource: named after its owner mark. */
async function projectsOf(ns: string): Promise<string[]> {
  const name = await ownerMarkIn("Project", ns, "tenant");
  const found = await platform.client().listProjects({ search: name });
  return found.filter((p) => p.name === name).map((p) => p.id);
}

/** Exactly one project of the resource, the one its status names, as declared. */
async function expectExactlyOne(s: RigScenario): Promise<void> {
  const read = async () => (await kube.get<ProjectObject>(projects, s.namespace, "tenant")) as ProjectObject;
  const obj = await until(read, "True");
  expect(await projectsOf(s.namespace)).toEqual([obj.status?.projectId]);
  expect(obj.status?.historyRetentionSeconds).toBe(3_600);
  await s.kill();
}

describe("killed while creating a project", () => {
  const step = (ns: string) => {
    const status = new RegExp(`/namespaces/${ns}/projects/tenant/status$`);
    return {
      /** The intent: the name the create will be sent with, recorded first. */
      intentRecorded: {
        method: "PATCH",
        path: status,
        body: /^(?![\s\S]*"projectId")[\s\S]*"creationName":"/,
      },
      /** The status write recording the created project and its operations. */
      projectRecorded: { method: "PATCH", path: status, body: /"projectId":"/ },
    } satisfies Record<string, Omit<ProxyRule, "action">>;
  };

  it.each([
    { at: "before the create (its intent being recorded)", hold: "intentRecorded" as const, before: 0 },
    { at: "after the create, before its status is written", hold: "projectRecorded" as const, before: 1 },
  ])("killed $at: exactly one project afterwards", async ({ hold, before }) => {
    const s = await rig.killedAt("pj-crash", {
      name: hold,
      rule: (ns) => step(ns)[hold],
      apply,
      onPlatform: projectsOf,
      before,
      recorded: async (ns) => (await kube.get<ProjectObject>(projects, ns, "tenant"))?.status?.projectId,
    });
    await expectExactlyOne(s);
  });

  it("the platform loses the create's answer: the project is found again, not created twice", async () => {
    const s = await rig.scenario("pj-lost");
    const creates = async () =>
      (await platform.requests(1000)).filter((r) => r.route === "POST /projects") as { fault?: string }[];
    const earlier = (await creates()).length;
    await platform.setFaults({
      requests: [{ method: "POST", route: "/projects", lose_response: true, times: 1 }],
    });
    try {
      await s.start();
      await apply(s.namespace);
      await expectExactlyOne(s);
      // The one create the platform applied is the one whose answer was lost: none was sent again.
      expect((await creates()).slice(earlier).map((r) => r.fault)).toEqual(["lose_response"]);
    } finally {
      await platform.setFaults({ requests: [] });
    }
  });
});
