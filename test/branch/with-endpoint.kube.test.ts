// A Branch and the ComputeEndpoint naming it by branchRef: the branch's create makes the endpoint
// too, in one request (the create-branch body's `endpoints`), and the ComputeEndpoint takes it over
// as its own (the Branch's status.endpoint names it by name and UID; the owner mark is on the
// branch): Ready, a connection Secret a client connects with, gone with the resource. A read-only
// ComputeEndpoint, or one applied after its Branch was created, makes its endpoint as before.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BranchObject } from "../../src/controllers/branch/index.ts";
import type { ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import type { Controller, KubeObject } from "../../src/runtime/index.ts";
import { together } from "../support/controllers.ts";
import { eventually, kubectl } from "../support/kube.ts";
import { ownerMarkIn } from "../support/marks.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { endpoint as computeEndpoint } from "../computeendpoint/scenario.ts";
import * as scenario from "./scenario.ts";
import { branch, branches, endpoints, served, whoAmI } from "./scenario.ts";
import { branchController, computeEndpointController } from "../../src/controllers/registry.ts";

let h: OperatorHarness;

const factory = together(
  (o) => branchController(o) as unknown as Controller<KubeObject>,
  (o) => computeEndpointController(o) as unknown as Controller<KubeObject>,
);

const postBranch = "POST /projects/:project_id/branches";
const postEndpoint = "POST /projects/:project_id/endpoints";
const patchEndpoint = "PATCH /projects/:project_id/endpoints/:endpoint_id";

/** Requests of each route served while `act` ran. */
async function counting(act: () => Promise<void>): Promise<Record<string, number>> {
  const routes = [postBranch, postEndpoint, patchEndpoint];
  const before = routes.map((r) => served(h, r));
  await act();
  return Object.fromEntries(routes.map((r, i) => [r, served(h, r) - (before[i] ?? 0)]));
}

const ready = <T extends BranchObject | ComputeEndpointObject>(plural: string, name: string) =>
  scenario.ready<T>(h, plural, name);

/** The ComputeEndpoint once it has waited for its Branch: in every cache of the operator. */
async function waiting(name: string): Promise<void> {
  await scenario.readyReason(h, endpoints, name, "False", "WaitingForReference");
}

const onBranch = async (branchId: string | undefined) =>
  (await h.platform.listEndpoints("proj-alpha")).filter((e) => e.branchId === branchId);

const secretData = (name: string) =>
  eventually(() => scenario.secretData(h.namespace, name), {
    what: `Secret ${name}`,
    intervalMs: 200,
    timeoutMs: 30_000,
  });

async function deleted(plural: string, name: string): Promise<void> {
  await kubectl(["delete", plural, name, "-n", h.namespace, "--wait=true", "--timeout=60s"]);
}

beforeAll(async () => {
  h = await startOperatorHarness(factory, { prefix: "br-ep" });
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("a Branch and the ComputeEndpoint naming it", () => {
  it("one POST makes the branch and its endpoint; the ComputeEndpoint takes it over, Ready with a working Secret", async () => {
    let b: BranchObject | undefined;
    let ep: ComputeEndpointObject | undefined;
    const requests = await counting(async () => {
      await h.apply(
        computeEndpoint("preview", {
          branchRef: { name: "preview" },
          computeUnits: { min: 0.5, max: 2 },
          autosuspend: "10m",
          connectionSecret: { name: "preview-db", role: "neondb_owner", database: "neondb" },
        }),
      );
      await waiting("preview");
      await h.apply(branch("preview", { parent: { branchName: "dev" } }));
      b = await ready<BranchObject>(branches, "preview");
      ep = await ready<ComputeEndpointObject>(endpoints, "preview");
    });
    expect(requests).toEqual({ [postBranch]: 1, [postEndpoint]: 0, [patchEndpoint]: 0 });
    // One endpoint on the branch, the one the ComputeEndpoint holds, made with its settings.
    const [endpoint, ...others] = await onBranch(b?.status?.branchId);
    expect(others).toEqual([]);
    expect(endpoint).toMatchObject({
      id: ep?.status?.endpointId,
      type: "read_write",
      autoscalingLimitMinCu: 0.5,
      autoscalingLimitMaxCu: 2,
      suspendTimeoutSeconds: 600,
    });
    expect(b?.status?.endpoint).toEqual({ name: "preview", uid: ep?.metadata.uid });
    // Its owner mark, which the create-branch body has no place for on the endpoint, is on the branch.
    const onPlatform = (await h.platform.listBranches("proj-alpha")).find(
      (x) => x.id === b?.status?.branchId,
    );
    expect(onPlatform?.annotations?.["neoncloud.dev/endpoint-owner"]).toBe(
      await ownerMarkIn("ComputeEndpoint", h.namespace, "preview"),
    );
    const data = await secretData("preview-db");
    expect(ep?.status?.connectionSecret?.name).toBe("preview-db");
    expect(await whoAmI(data.DATABASE_URL ?? "")).toBe("neondb_owner@neondb");

    // Deleting both leaves nothing on the platform.
    await deleted(endpoints, "preview");
    expect(await onBranch(b?.status?.branchId)).toEqual([]);
    await deleted(branches, "preview");
    expect((await h.platform.listBranches("proj-alpha")).map((x) => x.id)).not.toContain(b?.status?.branchId);
  });

  it("what the create-branch body cannot carry is the ComputeEndpoint's first PATCH", async () => {
    let ep: ComputeEndpointObject | undefined;
    const requests = await counting(async () => {
      await h.apply(computeEndpoint("pooled", { branchRef: { name: "pooled" }, pooler: { enabled: true } }));
      await waiting("pooled");
      await h.apply(branch("pooled", { parent: { branchName: "dev" } }));
      ep = await ready<ComputeEndpointObject>(endpoints, "pooled");
    });
    expect(requests).toEqual({ [postBranch]: 1, [postEndpoint]: 0, [patchEndpoint]: 1 });
    const endpoint = (await h.platform.listEndpoints("proj-alpha")).find(
      (e) => e.id === ep?.status?.endpointId,
    );
    expect(endpoint).toMatchObject({ poolerEnabled: true });
    // The Branch goes first: the platform deletes the branch's endpoints with it.
    await deleted(branches, "pooled");
    await deleted(endpoints, "pooled");
    expect((await h.platform.listEndpoints("proj-alpha")).map((e) => e.id)).not.toContain(endpoint?.id);
  });

  it("a read-only ComputeEndpoint, and one applied after its Branch was made, create their own endpoint", async () => {
    const requests = await counting(async () => {
      await h.apply(computeEndpoint("replica", { branchRef: { name: "later" }, type: "read_only" }));
      await waiting("replica");
      await h.apply(branch("later", { parent: { branchName: "dev" } }));
      const b = await ready<BranchObject>(branches, "later");
      expect(b.status?.endpoint).toBeUndefined();
      await h.apply(computeEndpoint("writer", { branchRef: { name: "later" } }));
      await ready<ComputeEndpointObject>(endpoints, "replica");
      await ready<ComputeEndpointObject>(endpoints, "writer");
    });
    expect(requests).toEqual({ [postBranch]: 1, [postEndpoint]: 2, [patchEndpoint]: 0 });
    const b = await h.get<BranchObject>(branches, "later");
    const types = (await onBranch(b.status?.branchId)).map((e) => e.type).sort();
    expect(types).toEqual(["read_only", "read_write"]);
    await deleted(endpoints, "replica");
    await deleted(endpoints, "writer");
    await deleted(branches, "later");
    expect(await onBranch(b.status?.branchId)).toEqual([]);
  });

  it("another installation's endpoint made with its branch is refused to spec.endpointId: its mark is on the branch", async () => {
    // As another client would: retried while the project is locked (423).
    const outside = <T>(act: () => Promise<T>) =>
      eventually(() => act().catch(() => undefined), { what: "a change from outside the operator" });
    const made = (annotations: Record<string, string>) =>
      outside(() =>
        h.platform.createBranch("proj-alpha", { annotations, endpoints: [{ type: "read_write" }] }),
      );
    const theirs = await made({ "neoncloud.dev/endpoint-owner": "k8s-ffffffff-0123456789abcdef" });
    const unmarked = await made({});
    const adopt = (name: string, b: typeof theirs) =>
      h.apply(
        computeEndpoint(name, {
          branchId: b.branch.id,
          endpointId: b.endpoints[0]?.id,
          computeUnits: { min: 2 },
        }),
      );
    const requests = await counting(async () => {
      await adopt("theirs", theirs);
      const refused = await scenario.readyReason(h, endpoints, "theirs", "False", "AlreadyManaged");
      expect(refused.status?.conditions?.find((c) => c.type === "Ready")?.message).toContain(
        "another installation of the operator",
      );
      // The same endpoint on a branch without the mark is adopted (and resized) as usual.
      await adopt("unmarked", unmarked);
      await ready<ComputeEndpointObject>(endpoints, "unmarked");
    });
    expect(requests).toEqual({ [postBranch]: 0, [postEndpoint]: 0, [patchEndpoint]: 1 });
    const [ours] = await onBranch(theirs.branch.id);
    expect(ours).toMatchObject({
      id: theirs.endpoints[0]?.id,
      autoscalingLimitMinCu: theirs.endpoints[0]?.autoscalingLimitMinCu,
    });
    // Deleting the refused resource leaves the other installation's endpoint alone.
    await deleted(endpoints, "theirs");
    expect((await onBranch(theirs.branch.id)).map((e) => e.id)).toEqual([theirs.endpoints[0]?.id]);
    await deleted(endpoints, "unmarked");
    for (const b of [theirs, unmarked])
      await outside(() => h.platform.deleteBranch("proj-alpha", b.branch.id));
  });
});
