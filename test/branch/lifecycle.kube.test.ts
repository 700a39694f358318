// A user declares branches with kubectl: from a parent named by branch name or by another Branch
// resource, with an expiry the platform honours, deleted or left behind with the resource; and a
// ComputeEndpoint that names its branch by a Branch resource waits for it, then runs on it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BranchObject } from "../../src/controllers/branch/index.ts";
import type { ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import type { Controller, KubeObject } from "../../src/runtime/index.ts";
import { together } from "../support/controllers.ts";
import { kubectl } from "../support/kube.ts";
import { ownerMarkIn } from "../support/marks.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import * as scenario from "./scenario.ts";
import { branch, branches, condition, endpoints, served } from "./scenario.ts";
import { branchController, computeEndpointController } from "../../src/controllers/registry.ts";

let h: OperatorHarness;

const factory = together(
  (o) => branchController(o) as unknown as Controller<KubeObject>,
  (o) => computeEndpointController(o) as unknown as Controller<KubeObject>,
);

async function platformBranches() {
  return h.platform.listBranches("proj-alpha");
}

const createsServed = () => served(h, "POST /projects/:project_id/branches");
const readyReason = <T extends BranchObject | ComputeEndpointObject>(
  plural: string,
  name: string,
  status: string,
  reason: string,
) => scenario.readyReason<T>(h, plural, name, status, reason);
const ready = <T extends BranchObject | ComputeEndpointObject>(plural: string, name: string) =>
  scenario.ready<T>(h, plural, name);

async function gone(plural: string, name: string): Promise<void> {
  await kubectl(["delete", plural, name, "-n", h.namespace, "--wait=true", "--timeout=60s"]);
}

beforeAll(async () => {
  h = await startOperatorHarness(factory, { prefix: "branch" });
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("Branch", () => {
  it("creates a branch from a parent named by its branch name and reports it Ready", async () => {
    await h.apply(branch("from-name", { parent: { branchName: "dev" }, name: "preview-from-name" }));
    const obj = await ready<BranchObject>(branches, "from-name");
    expect(obj.status).toMatchObject({
      name: "preview-from-name",
      parentId: "br-dev",
      currentState: "ready",
    });
    const onPlatform = (await platformBranches()).find((b) => b.id === obj.status?.branchId);
    expect(onPlatform).toMatchObject({
      name: "preview-from-name",
      parentId: "br-dev",
      currentState: "ready",
    });
    // The create's operation is recorded, finished.
    expect(obj.status?.operations?.map((op) => [op.action, op.status])).toEqual([
      ["create_branch", "finished"],
    ]);
  });

  it("waits for a parent Branch resource, then creates the branch from it", async () => {
    await h.apply(branch("child", { parent: { branchRef: { name: "base" } } }));
    const waiting = await readyReason<BranchObject>(branches, "child", "False", "WaitingForReference");
    expect(condition(waiting, "Ready")?.message).toContain("base does not exist yet");
    expect(waiting.status?.branchId).toBeUndefined();

    await h.apply(branch("base", { parent: { branchId: "br-staging" } }));
    const base = await ready<BranchObject>(branches, "base");
    const child = await ready<BranchObject>(branches, "child");
    expect(child.status?.parentId).toBe(base.status?.branchId);
    // With no name in the spec, the branch is named with the resource's owner mark.
    expect(child.status?.name).toBe(await ownerMarkIn("Branch", h.namespace, "child"));
  });

  it("a ComputeEndpoint on a branchRef waits for its Branch, then becomes Ready on it", async () => {
    await h.apply({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "ComputeEndpoint",
      metadata: { name: "db" },
      spec: { projectId: "proj-alpha", branchRef: { name: "db-branch" } },
    });
    const waiting = await readyReason<ComputeEndpointObject>(endpoints, "db", "False", "WaitingForReference");
    expect(condition(waiting, "Ready")?.message).toContain("db-branch does not exist yet");

    await h.apply(branch("db-branch", { parent: { branchName: "dev" } }));
    const b = await ready<BranchObject>(branches, "db-branch");
    const ep = await ready<ComputeEndpointObject>(endpoints, "db");
    expect(ep.status?.branchId).toBe(b.status?.branchId);
    const onPlatform = (await h.platform.listEndpoints("proj-alpha")).find(
      (e) => e.id === ep.status?.endpointId,
    );
    expect(onPlatform?.branchId).toBe(b.status?.branchId);
  });

  it("honours a short TTL: the platform deletes the branch, the resource reports it and does not recreate it", async () => {
    const before = createsServed();
    await h.apply(branch("short-lived", { ttl: "3s" }));
    const obj = await ready<BranchObject>(branches, "short-lived");
    const expiresAt = obj.status?.expiresAt;
    expect(expiresAt).toBeDefined();
    expect(Date.parse(expiresAt!)).toBeGreaterThan(Date.parse(obj.status!.createdAt!));

    const expired = await readyReason<BranchObject>(branches, "short-lived", "False", "Expired");
    expect(condition(expired, "Stalled")?.status).toBe("True");
    expect(condition(expired, "Ready")?.message).toContain("not recreated");
    expect((await platformBranches()).map((b) => b.id)).not.toContain(obj.status?.branchId);
    // One create for this resource, and no second one after the expiry.
    expect(createsServed() - before).toBe(1);
    expect((await platformBranches()).map((b) => b.name)).not.toContain(obj.status?.name);
    // Deleting the resource of an expired branch needs nothing from the platform.
    await gone(branches, "short-lived");
  });

  it("refuses an expiry moved into the past after creation, naming the field, and keeps the branch's", async () => {
    const first = { parent: { branchName: "dev" }, expiresAt: "2030-01-01T00:00:00Z" };
    const obj = await h
      .apply(branch("moved-back", first))
      .then(() => ready<BranchObject>(branches, "moved-back"));
    const patches = () => served(h, "PATCH /projects/:project_id/branches/:branch_id");
    const before = patches();
    await h.apply(branch("moved-back", { ...first, expiresAt: "2020-01-01T00:00:00Z" }));
    const refused = await readyReason<BranchObject>(branches, "moved-back", "False", "InvalidSpec");
    expect(condition(refused, "Ready")?.message).toContain(
      "spec.expiresAt: 2020-01-01T00:00:00Z is not in the future",
    );
    // Nothing was sent: the branch keeps its expiry, and its status still shows it.
    expect(patches()).toBe(before);
    const onPlatform = (await platformBranches()).find((b) => b.id === obj.status?.branchId);
    expect(Date.parse(onPlatform!.expiresAt!)).toBe(Date.parse("2030-01-01T00:00:00Z"));
    expect(refused.status?.branchId).toBe(obj.status?.branchId);
    await gone(branches, "moved-back");
  });

  it("deletes the platform branch with the resource under deletionPolicy Delete", async () => {
    await h.apply(branch("doomed", { parent: { branchName: "feature" } }));
    const obj = await ready<BranchObject>(branches, "doomed");
    await gone(branches, "doomed");
    expect((await platformBranches()).map((b) => b.id)).not.toContain(obj.status?.branchId);
  });

  it("leaves the platform branch under deletionPolicy Orphan", async () => {
    await h.apply(branch("kept", { parent: { branchName: "feature" }, deletionPolicy: "Orphan" }));
    const obj = await ready<BranchObject>(branches, "kept");
    await gone(branches, "kept");
    const still = (await platformBranches()).find((b) => b.id === obj.status?.branchId);
    expect(still?.currentState).toBe("ready");
  });

  it("a protected branch whose deletion the platform refused goes once the spec unprotects it", async () => {
    await h.apply(branch("guarded", { parent: { branchName: "feature" }, protected: true }));
    const obj = await ready<BranchObject>(branches, "guarded");
    expect(obj.status?.protected).toBe(true);
    await kubectl(["delete", "branch", "guarded", "-n", h.namespace, "--wait=false"]);
    const refused = await readyReason<BranchObject>(branches, "guarded", "False", "DeleteRefused");
    expect(condition(refused, "Ready")?.message).toContain("set spec.protected to false");
    expect((await platformBranches()).map((b) => b.id)).toContain(obj.status?.branchId);
    // What its own message advises: the deletion then runs the plan (unprotect) and goes on.
    await kubectl([
      "patch",
      "branch",
      "guarded",
      "-n",
      h.namespace,
      "--type=merge",
      "-p",
      '{"spec":{"protected":false}}',
    ]);
    await kubectl(["wait", "--for=delete", "branch/guarded", "-n", h.namespace, "--timeout=60s"]);
    expect((await platformBranches()).map((b) => b.id)).not.toContain(obj.status?.branchId);
  });
});
