// A password reset whose new password is lost (its answer never arrives, or the operator dies
// before writing it) must not leave a Secret with a dead password: on the next pass the operator
// resets again and writes the password the platform has.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import type { Secret } from "../../src/controllers/managed/credentials.ts";
import { startCrashRig, type CrashRig } from "../support/crash-rig.ts";
import { eventually, kubectl } from "../support/kube.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { endpoint, factory, reader } from "./scenario.ts";

let h: OperatorHarness;
let rig: CrashRig;
const { readyWith } = reader(() => h);

const resetRoute = "POST /projects/:project_id/branches/:branch_id/roles/:role_name/reset_password";

/** Resets the platform carried out: answered (200) or applied with the answer lost (0); a 423 is none. */
function resets(): number {
  const byStatus = h.emulator.requestLog.counters().by_route[resetRoute] ?? {};
  return (byStatus["200"] ?? 0) + (byStatus["0"] ?? 0);
}

async function password(namespace: string, name: string): Promise<string | undefined> {
  const out = await kubectl(["get", "secret", name, "-n", namespace, "-o", "json", "--ignore-not-found"]);
  if (!out.trim()) return undefined;
  const value = (JSON.parse(out) as Secret).data?.PGPASSWORD;
  return value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8");
}

/** The Secret once it holds the password the platform has for the role now. */
function currentPassword(namespace: string, name: string, branchId: string): Promise<string> {
  return eventually(
    async () => {
      const [stored, live] = await Promise.all([
        password(namespace, name),
        h.platform.revealPassword("proj-alpha", branchId, "neondb_owner"),
      ]);
      return stored !== undefined && stored === live ? stored : undefined;
    },
    { what: `Secret ${name} with the live password`, intervalMs: 200, timeoutMs: 60_000 },
  );
}

beforeAll(async () => {
  h = await startOperatorHarness(factory, { prefix: "conn-crash" });
  rig = await startCrashRig({ url: h.emulator.url, bootstrapKey: h.emulator.bootstrapKey });
});

afterAll(async () => {
  await rig?.close();
  await h?.stop();
});

describe("connection Secret after a lost reset", () => {
  it("a reset whose answer was lost is sent again, and the Secret gets the live password", async () => {
    await h.start();
    await h.apply(
      endpoint("lost", {
        branchId: "br-staging",
        connectionSecret: { name: "lost-db", role: "neondb_owner", database: "neondb" },
      }),
    );
    const first = await currentPassword(h.namespace, "lost-db", "br-staging");
    const before = resets();
    h.emulator.faults.set({
      requests: [
        {
          method: "POST",
          route: "/projects/:project_id/branches/:branch_id/roles/:role_name/reset_password",
          lose_response: true,
          times: 1,
        },
      ],
    });
    await kubectl(["annotate", "cep", "lost", "-n", h.namespace, "neoncloud.dev/rotatePasswordAt=1"]);
    const stored = await eventually(
      async () => {
        const p = await currentPassword(h.namespace, "lost-db", "br-staging");
        return p !== first ? p : undefined;
      },
      { what: "a new live password", intervalMs: 200, timeoutMs: 60_000 },
    );
    h.emulator.faults.clear();
    expect(stored).not.toBe(first);
    // The lost one (applied by the platform, its password never seen) and the one sent again.
    expect(resets() - before).toBe(2);
    const obj = await readyWith("lost", (o) => o.status?.connectionSecret?.passwordRotatedAt === "1");
    expect(obj.status?.connectionSecret?.passwordReset).toBeUndefined();
    await h.kill();
  });

  it("killed after the reset's answer, before the Secret write: the next operator resets again", async () => {
    const s = await rig.scenario("conn-kill");
    await s.start();
    await kubectl(["apply", "-n", s.namespace, "-f", "-"], {
      input: JSON.stringify(
        endpoint("survivor", {
          branchId: "br-feature",
          connectionSecret: { name: "survivor-db", role: "neondb_owner", database: "neondb" },
        }),
      ),
    });
    const first = await currentPassword(s.namespace, "survivor-db", "br-feature");
    // From outside: the proxy holds the Secret write that would store the new password, and the
    // operator process is killed while it is held.
    const write = rig.proxy.arm({
      method: "PATCH",
      path: new RegExp(`/namespaces/${s.namespace}/secrets/survivor-db$`),
      action: "hold",
    });
    const before = resets();
    await kubectl(["annotate", "cep", "survivor", "-n", s.namespace, "neoncloud.dev/rotatePasswordAt=1"]);
    await write.waitForHit("the Secret write after the reset", 60_000);
    await s.kill();
    rig.proxy.reset();
    expect(resets() - before).toBe(1);
    // The platform changed the password; the Secret still holds the old, dead one.
    expect(await password(s.namespace, "survivor-db")).toBe(first);
    expect(await h.platform.revealPassword("proj-alpha", "br-feature", "neondb_owner")).not.toBe(first);
    const marked = JSON.parse(
      await kubectl(["get", "cep", "survivor", "-n", s.namespace, "-o", "json"]),
    ) as ComputeEndpointObject;
    expect(marked.status?.connectionSecret?.passwordReset).toBe("Rotation");

    await s.start();
    const stored = await currentPassword(s.namespace, "survivor-db", "br-feature");
    expect(stored).not.toBe(first);
    expect(resets() - before).toBe(2);
    await s.kill();
    // No password in any line the operator processes wrote.
    const lines = rig.lines.join("\n");
    expect(lines.includes(first)).toBe(false);
    expect(lines.includes(stored)).toBe(false);
  });
});
