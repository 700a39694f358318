// A connection Secret follows a reset of its branch from the parent: a role the branch made itself
// comes back (re-created by the Branch) with a new password, a role the parent has comes back with
// the parent's; either way, once the reset settles, a client connects with nothing but the
// Secret's values, the password was read again (no reset), and the old password is refused.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BranchObject } from "../../src/controllers/branch/index.ts";
import { type ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import type { Controller, KubeObject } from "../../src/runtime/index.ts";
import { together } from "../support/controllers.ts";
import { endpoint } from "../computeendpoint/scenario.ts";
import { eventually, kubectl } from "../support/kube.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import * as scenario from "./scenario.ts";
import { branch, branches, condition, endpoints, ready, served, whoAmI } from "./scenario.ts";
import { branchController, computeEndpointController } from "../../src/controllers/registry.ts";

let h: OperatorHarness;
const passwords = new Set<string>();

const factory = together(
  (o) => branchController(o) as unknown as Controller<KubeObject>,
  (o) => computeEndpointController(o) as unknown as Controller<KubeObject>,
);

const resetPassword = "POST /projects/:project_id/branches/:branch_id/roles/:role_name/reset_password";

async function secretData(name: string): Promise<Record<string, string> | undefined> {
  const data = await scenario.secretData(h.namespace, name);
  if (data?.PGPASSWORD) passwords.add(data.PGPASSWORD);
  return data;
}

function secretWith(name: string, check: (d: Record<string, string>) => boolean = () => true) {
  return eventually(
    async () => {
      const data = await secretData(name);
      return data && check(data) ? data : undefined;
    },
    { what: `Secret ${name}`, intervalMs: 200, timeoutMs: 30_000 },
  );
}

async function annotate(plural: string, name: string, annotation: string): Promise<void> {
  await kubectl(["annotate", plural, name, "-n", h.namespace, annotation, "--overwrite"]);
}

/** The Branch once reset for `value` and Ready again (its roles and databases back). */
function resetDone(name: string, value: string): Promise<BranchObject> {
  return eventually(
    async () => {
      const obj = await h.get<BranchObject>(branches, name);
      return condition(obj, "Ready")?.status === "True" && obj.status?.restoredFromParentAt === value
        ? obj
        : undefined;
    },
    { what: `${name} reset and Ready`, timeoutMs: 30_000, intervalMs: 100 },
  );
}

beforeAll(async () => {
  h = await startOperatorHarness(factory, { prefix: "branch-reset-secret" });
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("a connection Secret after its branch is reset from the parent", () => {
  it("a role made on the branch: re-created with a new password, which the Secret then holds", async () => {
    await h.apply(
      branch("preview", {
        parent: { branchName: "dev" },
        roles: [{ name: "app" }],
        databases: [{ name: "shop", owner: "app" }],
      }),
    );
    const created = await ready<BranchObject>(h, branches, "preview");
    const branchId = created.status!.branchId!;
    await h.apply(
      endpoint("preview", {
        branchRef: { name: "preview" },
        connectionSecret: { name: "preview-db", role: "app", database: "shop" },
      }),
    );
    const before = await secretWith("preview-db");
    expect(await whoAmI(before.DATABASE_URL ?? "")).toBe("app@shop");
    const resetsBefore = served(h, resetPassword);

    await annotate(branches, "preview", "neoncloud.dev/restoredFromParentAt=first");
    await resetDone("preview", "first");
    const after = await secretWith("preview-db", (d) => d.PGPASSWORD !== before.PGPASSWORD);
    await ready<ComputeEndpointObject>(h, endpoints, "preview");
    expect(after.PGPASSWORD).toBe(await h.platform.revealPassword("proj-alpha", branchId, "app"));
    expect(await whoAmI(after.DATABASE_URL ?? "")).toBe("app@shop");
    expect(await whoAmI(after.DATABASE_URL_POOLED ?? "")).toBe("app@shop");
    // The role of before the reset is gone, and its password with it.
    await expect(whoAmI(before.DATABASE_URL ?? "")).rejects.toMatchObject({ code: "28P01" });
    // A password read sufficed: nothing was reset to get it.
    expect(served(h, resetPassword)).toBe(resetsBefore);
  });

  it("a role the parent has, on an endpoint naming the branch by id: the Secret holds the parent's password", async () => {
    await h.apply(branch("preview-2", { parent: { branchName: "dev" } }));
    const created = await ready<BranchObject>(h, branches, "preview-2");
    const branchId = created.status!.branchId!;
    await h.apply(
      endpoint("preview-2", {
        branchId,
        connectionSecret: { name: "preview-2-db", role: "neondb_owner", database: "neondb" },
      }),
    );
    const first = await secretWith("preview-2-db");
    // The child's own password (a rotation), so the parent's differs from the Secret's.
    await annotate(endpoints, "preview-2", "neoncloud.dev/rotatePasswordAt=child");
    const rotated = await secretWith("preview-2-db", (d) => d.PGPASSWORD !== first.PGPASSWORD);
    const parents = await h.platform.revealPassword("proj-alpha", "br-dev", "neondb_owner");
    expect(rotated.PGPASSWORD).not.toBe(parents);

    await annotate(branches, "preview-2", "neoncloud.dev/restoredFromParentAt=first");
    await resetDone("preview-2", "first");
    const after = await secretWith("preview-2-db", (d) => d.PGPASSWORD === parents);
    expect(await h.platform.revealPassword("proj-alpha", branchId, "neondb_owner")).toBe(parents);
    expect(await whoAmI(after.DATABASE_URL ?? "")).toBe("neondb_owner@neondb");
    await expect(whoAmI(rotated.DATABASE_URL ?? "")).rejects.toMatchObject({ code: "28P01" });
  });

  it("keeps every password of these Secrets out of the operator's log and Events", async () => {
    expect(passwords.size).toBeGreaterThanOrEqual(4);
    const events = await kubectl(["get", "events", "-n", h.namespace, "-o", "json"]);
    const logs = h.logs.text();
    for (const password of passwords) {
      expect(logs.includes(password), "a password in the operator's log").toBe(false);
      expect(events.includes(password), "a password in an Event").toBe(false);
    }
  });
});
