// A user declares the roles and databases a branch must have, and resets a branch from its parent
// by annotating it: created when missing and never deleted, refused with the field named when a
// database's owner does not exist, one restore per new annotation value (refused for a branch
// without a parent), and the branch's own roles created again after the reset.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BranchObject } from "../../src/controllers/branch/index.ts";
import type { Controller, KubeObject } from "../../src/runtime/index.ts";
import { eventsOf, eventually, kubectl } from "../support/kube.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { branch, branches, condition, ready, readyReason, served } from "./scenario.ts";
import { branchController } from "../../src/controllers/registry.ts";

let h: OperatorHarness;

const annotation = "neoncloud.dev/restoredFromParentAt";
const restores = () => served(h, "POST /projects/:project_id/branches/:branch_id/restore");

const roleNames = async (branchId: string) =>
  (await h.platform.listRoles("proj-alpha", branchId)).map((r) => r.name);
const databases = async (branchId: string) =>
  (await h.platform.listDatabases("proj-alpha", branchId)).map((d) => [d.name, d.ownerName]);

async function events(name: string, reason: string): Promise<string[]> {
  const recorded = await eventsOf(h.namespace, `involvedObject.name=${name},reason=${reason}`);
  return recorded.map((e) => e.message ?? "");
}

beforeAll(async () => {
  h = await startOperatorHarness((o) => branchController(o) as unknown as Controller<KubeObject>, {
    prefix: "branch-content",
  });
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("roles and databases a Branch must have", () => {
  it("creates them, lists them in status, and leaves them when they leave the spec", async () => {
    const spec = {
      parent: { branchName: "dev" },
      roles: [{ name: "app" }, { name: "reporting" }],
      databases: [
        { name: "shop", owner: "app" },
        { name: "archive", owner: "neondb_owner" },
      ],
    };
    await h.apply(branch("with-content", spec));
    const obj = await ready<BranchObject>(h, branches, "with-content");
    expect(obj.status?.roles).toEqual(["app", "reporting"]);
    expect(obj.status?.databases).toEqual(
      expect.arrayContaining([
        { name: "shop", owner: "app" },
        { name: "archive", owner: "neondb_owner" },
      ]),
    );
    const id = obj.status!.branchId!;
    expect(await roleNames(id)).toEqual(expect.arrayContaining(["neondb_owner", "app", "reporting"]));
    expect(await databases(id)).toEqual(
      expect.arrayContaining([
        ["shop", "app"],
        ["archive", "neondb_owner"],
      ]),
    );

    // Out of the spec: nothing is deleted on the platform.
    await h.apply(branch("with-content", { parent: { branchName: "dev" } }));
    await readyWith("with-content");
    expect(await roleNames(id)).toEqual(expect.arrayContaining(["app", "reporting"]));
    expect(await databases(id)).toContainEqual(["shop", "app"]);
  });

  it("refuses a database whose owner the branch does not have, naming the field", async () => {
    await h.apply(
      branch("bad-owner", {
        parent: { branchName: "dev" },
        roles: [{ name: "app" }],
        databases: [{ name: "orders", owner: "nobody" }],
      }),
    );
    const obj = await readyReason<BranchObject>(h, branches, "bad-owner", "False", "InvalidSpec");
    expect(condition(obj, "Ready")?.message).toBe(
      `spec.databases[0].owner: role nobody is neither in spec.roles nor on branch ${obj.status?.branchId}`,
    );
    expect(condition(obj, "Stalled")?.status).toBe("True");
    // The role before it was created; the database was not.
    const id = obj.status!.branchId!;
    expect(await roleNames(id)).toContain("app");
    expect((await databases(id)).map(([name]) => name)).not.toContain("orders");
  });
});

describe("reset from parent on demand", () => {
  it("restores once per new annotation value; what the child had of its own is gone, its spec roles come back", async () => {
    await h.apply(branch("resettable", { parent: { branchName: "dev" }, roles: [{ name: "app" }] }));
    const before = await ready<BranchObject>(h, branches, "resettable");
    const id = before.status!.branchId!;
    expect(before.status?.lastResetAt).toBeUndefined();
    // Something made on the child only, outside the operator.
    const scratch = await h.platform.createRole("proj-alpha", id, "scratch");
    await h.platform.waitForOperations("proj-alpha", scratch.operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    const restoresBefore = restores();

    await kubectl([
      "annotate",
      branches,
      "resettable",
      "-n",
      h.namespace,
      `${annotation}=2026-11-23T03:00:00Z`,
    ]);
    const after = await readyWith(
      "resettable",
      (o) => o.status?.restoredFromParentAt === "2026-11-23T03:00:00Z",
    );
    expect(restores() - restoresBefore).toBe(1);
    expect(after.status?.lastResetAt).toBeDefined();
    expect(after.status?.parentId).toBe("br-dev");
    expect(after.status?.roles).toEqual(["app"]);
    const roles = await roleNames(id);
    expect(roles).not.toContain("scratch");
    expect(roles).toContain("app");
    expect(await events("resettable", "Restoring")).toEqual([
      `resetting branch ${id} from its parent br-dev (${annotation}=2026-11-23T03:00:00Z)`,
    ]);

    // A new value resets again.
    await kubectl([
      "annotate",
      "--overwrite",
      branches,
      "resettable",
      "-n",
      h.namespace,
      `${annotation}=again`,
    ]);
    await readyWith("resettable", (o) => o.status?.restoredFromParentAt === "again");
    expect(restores() - restoresBefore).toBe(2);
  });

  it("is refused for a branch without a parent, naming the annotation, with no request", async () => {
    const main = (await h.platform.listBranches("proj-alpha")).find((b) => b.default)!;
    const restoresBefore = restores();
    await h.apply(branch("root", { branchId: main.id, deletionPolicy: "Orphan" }, { [annotation]: "now" }));
    const obj = await readyReason<BranchObject>(h, branches, "root", "False", "RestoreRefused");
    expect(condition(obj, "Ready")?.message).toBe(
      `${annotation}=now: branch ${main.id} has no parent (it is the project's root branch), so there is nothing to reset it from; remove the annotation`,
    );
    expect(restores()).toBe(restoresBefore);
  });
});

/** Waits for the Branch to be Ready (Available) for its generation and to satisfy `check`. */
function readyWith(name: string, check: (obj: BranchObject) => boolean = () => true): Promise<BranchObject> {
  return eventually(
    async () => {
      const obj = await h.get<BranchObject>(branches, name);
      const c = condition(obj, "Ready");
      const current = c?.status === "True" && c.observedGeneration === obj.metadata.generation;
      return current && check(obj) ? obj : undefined;
    },
    { what: `${name} Ready and as expected`, timeoutMs: 30_000, intervalMs: 100 },
  );
}
