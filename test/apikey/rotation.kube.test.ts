// Rotation under use: a consumer that re-reads the Secret before each request
// never holds a revoked key, across several rotations on the real clock.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyResourceKind } from "../../src/controllers/apikey/index.ts";
import { ContentType } from "../../src/runtime/index.ts";
import {
  type ApiKeyWorld,
  authenticates,
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

describe("rotation", () => {
  it("a client re-reading the Secret in a loop never gets a 401 while keys rotate", async () => {
    const s = await world.scenario("ak-rotate");
    await s.start();
    await s.create("busy", { keyName: s.namespace, rotation: { interval: "6s", gracePeriod: "3s" } });
    const first = await s.waitReady("busy");
    expect(first.status?.nextRotationAt).toBeDefined();

    const seen = new Set<number>();
    const refused: number[] = [];
    let requests = 0;
    // Two rotations seen by the client, each one a new key in the same Secret.
    while (seen.size < 3) {
      const stored = await s.stored("busy-api-key");
      if (!stored) throw new Error("the Secret disappeared during a rotation");
      seen.add(stored.keyId);
      requests++;
      if (!(await authenticates(world, stored.value))) refused.push(stored.keyId);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(refused).toEqual([]);
    expect(requests).toBeGreaterThan(10);

    // Rotation switched off: the replaced keys are revoked once their grace period is over,
    // and the key in the Secret is the one live key.
    await world.kube.patch(
      apiKeyResourceKind,
      s.namespace,
      "busy",
      { spec: { rotation: null } },
      ContentType.MergePatch,
    );
    await s.waitReady("busy", (o) => o.status?.previousKeyId === undefined && !o.status?.nextRotationAt);
    const stored = (await s.stored("busy-api-key"))!;
    expect((await liveKeys(world, s.namespace)).map((k) => k.id)).toEqual([stored.keyId]);
    expect(await authenticates(world, stored.value)).toBe(true);
  });
});

describe("secrecy", () => {
  it("no key value appears in logs, events or ApiKey status", async () => {
    await expectNoKeyValueLeaked(world);
  });
});
