// The operator killed at every step of creating and of rotating a key, and
// the platform losing a create response: afterwards every key the operator
// made is either in its Secret or revoked, and the Secret holds a working key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/kube.ts";
import {
  type ApiKeyWorld,
  type Scenario,
  authenticates,
  crashAt,
  expectNoKeyValueLeaked,
  liveKeys,
  startApiKeyWorld,
} from "./harness.ts";

let world: ApiKeyWorld;

beforeAll(async () => {
  world = await startApiKeyWorld();
});

afterAll(async () => {
  await world.close();
});

/** Nothing lost (keys are named after the scenario's namespace, as all share one emulator account): exactly one live key of this ApiKey, the one in its Secret, and it works. */
async function expectNothingLost(s: Scenario, name: string): Promise<number> {
  const keyName = s.namespace; // each scenario names its keys after its namespace
  const obj = await s.waitReady(name, (o) => o.status?.previousKeyId === undefined);
  const stored = await s.stored(`${name}-api-key`);
  expect(stored?.keyId).toBe(obj.status?.keyId);
  expect((await liveKeys(world, keyName)).map((k) => k.id)).toEqual([stored?.keyId]);
  expect(await authenticates(world, stored!.value)).toBe(true);
  return stored!.keyId;
}

const createSteps = [
  "create:before-pending",
  "create:before-create",
  "create:after-create",
  "create:after-secret-write",
  "create:after-status",
];

describe("killed while creating", () => {
  it.each(createSteps)("killed at %s: the key ends up in its Secret, nothing orphaned", async (step) => {
    const s = await world.scenario("ak-crash");
    const crash = crashAt(step);
    const first = await s.start({ crashPoint: crash.hook });
    await s.create("svc", { keyName: s.namespace });
    await eventually(() => (crash.crashed() ? true : undefined), { what: `a crash at ${step}` });
    await s.stop(first);
    const inSecretAtCrash = (await s.stored("svc-api-key"))?.keyId;
    await s.start();
    const kept = await expectNothingLost(s, "svc");
    if (step === "create:after-create") {
      // Its value died with the process: found by its pending name and revoked.
      const events = await eventually(async () => {
        const list = await s.events();
        return list.some((e) => e.reason === "OrphanKeyRevoked") ? list : undefined;
      });
      expect(events.length).toBeGreaterThan(0);
    }
    if (step === "create:after-secret-write") expect(kept).toBe(inSecretAtCrash); // adopted, not replaced
  });

  it("the platform loses the create response: the unreachable key is revoked and a new one stored", async () => {
    const s = await world.scenario("ak-lost-response");
    await world.platform.setFaults({
      requests: [{ method: "POST", route: "/api_keys", lose_response: true, times: 1 }],
    });
    try {
      await s.start();
      await s.create("svc", { keyName: s.namespace });
      await expectNothingLost(s, "svc");
    } finally {
      await world.platform.setFaults({ requests: [] });
    }
    const events = await s.events();
    expect(events.some((e) => e.reason === "OrphanKeyRevoked")).toBe(true);
  });
});

const rotationSteps = [
  "rotate:before-pending",
  "rotate:before-create",
  "rotate:after-create",
  "rotate:after-secret-write",
  "rotate:after-status",
  "rotate:before-revoke-previous",
  "rotate:after-revoke-previous",
];

const hour = 3_600_000;

describe("killed while rotating", () => {
  it.each(rotationSteps)("killed at %s: one working key in the Secret, the old one revoked", async (step) => {
    const s = await world.scenario("ak-rotate-crash");
    const healthy = await s.start();
    await s.create("svc", { keyName: s.namespace, rotation: { interval: "1h", gracePeriod: "1m" } });
    const original = await expectNothingLost(s, "svc");
    const originalValue = (await s.stored("svc-api-key"))!.value;
    await s.stop(healthy);

    // An hour later the rotation is due; a controller that will be killed at `step` takes it on.
    s.clockOffsetMs = hour + 1_000;
    const crash = crashAt(step);
    const doomed = await s.start({ crashPoint: crash.hook });
    await eventually(
      async () => {
        if (crash.crashed()) return true;
        const obj = await s.get("svc");
        if (obj?.status?.previousKeyId !== undefined && !obj.status.pendingKeyName) {
          // Rotated without a crash: the step is in the grace period's end, so let it come.
          s.clockOffsetMs = hour + 3 * 60_000;
          await s.touch("svc");
        }
        return undefined;
      },
      { what: `a crash at ${step}` },
    );
    await s.stop(doomed);

    await s.start();
    await s.touch("svc");
    await s.waitReady("svc", (o) => o.status?.keyId !== original);
    // Let the grace period of the replaced key end.
    s.clockOffsetMs += 3 * 60_000;
    await s.touch("svc");
    const rotated = await expectNothingLost(s, "svc");
    expect(rotated).not.toBe(original);
    expect(await authenticates(world, originalValue)).toBe(false);
  });
});

describe("secrecy", () => {
  it("no key value appears in logs, events or ApiKey status", async () => {
    await expectNoKeyValueLeaked(world);
  });
});
