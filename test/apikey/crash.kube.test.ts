// The operator killed (SIGKILL, a process of its own) at every step boundary
// of creating, rotating, replacing and deleting a key, and the platform losing
// a create response. Each moment is produced from outside: the API proxy holds
// the operator's next Kubernetes request at that step, the test checks the
// platform shows the moment (a key created, or not yet revoked), then kills
// the process; a fresh one must finish the work. Afterwards every key the
// operator made is in its Secret or revoked, one live key per ApiKey, and no
// key value is in any log, Event or status.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiKeyObject } from "../../src/controllers/apikey/index.ts";
import { decodeSecretValue, secretKind, type Secret } from "../../src/controllers/managed/credentials.ts";
import { KubeClient, eventKind, type KubeObject } from "../../src/runtime/index.ts";
import type { HeldRequest, ProxyRule } from "../support/api-proxy.ts";
import { startCrashRig, type CrashRig, type RigScenario } from "../support/crash-rig.ts";
import { adminKubeConfig, eventually, kubectl } from "../support/kube.ts";
import { startPlatform, type TestPlatform } from "../support/platform/platform.ts";
import { authenticates, liveKeys } from "./harness.ts";

let platform: TestPlatform;
let rig: CrashRig;
let kube: KubeClient;
/** Every key value the tests saw, to prove none of them leaked. */
const seenValues = new Set<string>();
const apiKeys = { group: "neoncloud.dev", version: "v1alpha1", plural: "apikeys", kind: "ApiKey" };

beforeAll(async () => {
  platform = await startPlatform();
  seenValues.add(platform.emulator.bootstrapKey);
  rig = await startCrashRig({ url: platform.emulator.url, bootstrapKey: platform.emulator.bootstrapKey });
  kube = new KubeClient(adminKubeConfig());
});

afterAll(async () => {
  await rig?.close();
  await platform?.close();
});

/** The requests of ApiKey `svc` in a namespace that mark its steps (see apikey-issue.ts for their order). */
function steps(ns: string) {
  const status = new RegExp(`/namespaces/${ns}/apikeys/svc/status$`);
  const secret = new RegExp(`/namespaces/${ns}/secrets/svc-api-key$`);
  return {
    /** Status write recording the name of the key about to be created. */
    pendingRecorded: { method: "PATCH", path: status, body: /"pendingKeyName":"/ },
    /** The read of the key's Secret that precedes a create, an orphan revoke, a replace or a delete. */
    secretRead: { method: "GET", path: secret },
    /**
     * The Secret write of a new key, one server-side apply (a PATCH): it creates the Secret the
     * first time and replaces the key on rotation.
     */
    secretCreated: { method: "PATCH", path: secret, body: /"apiKey"/ },
    secretReplaced: { method: "PATCH", path: secret, body: /"apiKey"/ },
    secretDeleted: { method: "DELETE", path: secret },
    /** Status write recording the stored key (pending name cleared). */
    keyRecorded: { method: "PATCH", path: status, body: /"pendingKeyName":null/ },
    /** Status write of Ready (a pass's last write). */
    readyRecorded: { method: "PATCH", path: status, body: /"conditions"/ },
    /** Status write forgetting a key whose Secret was lost (after revoking it). */
    keyForgotten: { method: "PATCH", path: status, body: /"keyId":null/ },
    /** Status write after the rotation's previous key was revoked. */
    previousCleared: { method: "PATCH", path: status, body: /"previousKeyId":null/ },
  } satisfies Record<string, Omit<ProxyRule, "action">>;
}

type Step = keyof ReturnType<typeof steps>;

interface Case {
  s: RigScenario;
  ns: string;
  apply(spec: Record<string, unknown>): Promise<void>;
  get(): Promise<ApiKeyObject | undefined>;
  /** The Secret's key and id; the value is remembered for the leak check. */
  stored(): Promise<{ keyId: number; value: string } | undefined>;
  /** Ready, nothing pending, no key in grace, and `check`. */
  settled(check?: (o: ApiKeyObject) => boolean): Promise<ApiKeyObject>;
  /** Ids of the live keys of this ApiKey on the platform (keys are named after the namespace). */
  live(): Promise<number[]>;
  reasons(): Promise<string[]>;
  /**
   * Walks the operator through `path`: holds the request of each step in turn,
   * lets it go once the next step is armed, and kills the operator while the
   * last one is held (so it never reaches the API server). `trigger` starts the work.
   */
  killAt(path: Step[], trigger?: () => Promise<void>): Promise<void>;
}

async function newCase(prefix: string): Promise<Case> {
  const s = await rig.scenario(prefix);
  const ns = s.namespace;
  const c: Case = {
    s,
    ns,
    async apply(spec) {
      await kubectl(["apply", "-n", ns, "-f", "-"], {
        input: JSON.stringify({
          apiVersion: "neoncloud.dev/v1alpha1",
          kind: "ApiKey",
          metadata: { name: "svc" },
          spec: { keyName: ns, ...spec },
        }),
      });
    },
    get: () => kube.get<ApiKeyObject>(apiKeys, ns, "svc"),
    async stored() {
      const secret = await kube.get<Secret>(secretKind, ns, "svc-api-key");
      const value = secret && decodeSecretValue(secret, "apiKey");
      const id = secret && decodeSecretValue(secret, "keyId");
      if (!value || !id) return undefined;
      seenValues.add(value);
      return { keyId: Number(id), value };
    },
    settled(check = () => true) {
      return eventually(
        async () => {
          const obj = await c.get();
          const ready = obj?.status?.conditions?.find((x) => x.type === "Ready");
          return obj &&
            ready?.status === "True" &&
            ready.observedGeneration === obj.metadata.generation &&
            !obj.status?.pendingKeyName &&
            obj.status?.previousKeyId === undefined &&
            check(obj)
            ? obj
            : undefined;
        },
        { what: `ApiKey ${ns}/svc settled`, timeoutMs: 60_000 },
      );
    },
    async live() {
      return (await liveKeys({ platform }, ns)).map((k) => k.id);
    },
    async reasons() {
      const list = await kube.list<KubeObject & { reason?: string }>(eventKind, { namespace: ns });
      return list.items.map((e) => e.reason ?? "");
    },
    async killAt(path, trigger) {
      const named = steps(ns);
      let held: HeldRequest | undefined;
      let first = true;
      for (const step of path) {
        const rule = rig.proxy.arm({ ...named[step], action: "hold", times: 1 });
        if (first && trigger) await trigger();
        first = false;
        held?.release();
        held = await rule.waitForHit(`the operator's request at ${step}`);
      }
      await s.kill();
      rig.proxy.reset();
    },
  };
  return c;
}

/** Nothing lost: exactly one live key of this ApiKey, the one in its Secret and status, and it works. */
async function expectNothingLost(c: Case, check?: (o: ApiKeyObject) => boolean): Promise<number> {
  const obj = await c.settled(check);
  const stored = await c.stored();
  expect(stored?.keyId).toBe(obj.status?.keyId);
  expect(await c.live()).toEqual([stored?.keyId]);
  expect(await authenticates({ platform }, stored!.value)).toBe(true);
  return stored!.keyId;
}

describe("killed while creating", () => {
  // The old crash points "reconcile:begin" and "create:before-pending" are one moment seen
  // from outside: nothing written yet; "after pending" and "before create" are another.
  const cases: { at: string; path: Step[] }[] = [
    { at: "before the pending key name is recorded", path: ["pendingRecorded"] },
    { at: "after the pending name, before the create", path: ["pendingRecorded", "secretRead"] },
    { at: "after the create, before the Secret write", path: ["pendingRecorded", "secretCreated"] },
    { at: "after the Secret write, before the status", path: ["pendingRecorded", "keyRecorded"] },
    { at: "after the status, before Ready", path: ["pendingRecorded", "keyRecorded", "readyRecorded"] },
  ];

  it.each(cases)("killed $at: the key ends up in its Secret, nothing orphaned", async ({ path }) => {
    const c = await newCase("ak-crash");
    await c.s.start();
    await c.killAt(path, () => c.apply({}));
    const last = path.at(-1);
    const atKill = { live: await c.live(), stored: await c.stored() };
    // The moment is what the name says: the platform shows whether the key exists yet.
    if (last === "pendingRecorded" || last === "secretRead") expect(atKill.live).toEqual([]);
    else expect(atKill.live).toHaveLength(1);
    if (last === "secretCreated") expect(atKill.stored).toBeUndefined();
    else if (last !== "pendingRecorded" && last !== "secretRead")
      expect(atKill.stored?.keyId).toBe(atKill.live[0]);

    await c.s.start();
    const kept = await expectNothingLost(c);
    if (last === "secretCreated") {
      // Its value died with the process: found by its pending name and revoked.
      expect(kept).not.toBe(atKill.live[0]);
      await eventually(async () => ((await c.reasons()).includes("OrphanKeyRevoked") ? true : undefined), {
        what: "the OrphanKeyRevoked event",
      });
    }
    if (last === "keyRecorded" || last === "readyRecorded") expect(kept).toBe(atKill.stored?.keyId); // adopted, not replaced
  });

  it("the platform loses the create response: the unreachable key is revoked and a new one stored", async () => {
    const c = await newCase("ak-lost-response");
    await platform.setFaults({
      requests: [{ method: "POST", route: "/api_keys", lose_response: true, times: 1 }],
    });
    try {
      await c.s.start();
      await c.apply({});
      await expectNothingLost(c);
    } finally {
      await platform.setFaults({ requests: [] });
    }
    expect(await c.reasons()).toContain("OrphanKeyRevoked");
    await c.s.kill();
  });

  it.each([
    { at: "before revoking the orphaned key", path: ["secretRead"] as Step[] },
    {
      at: "after revoking the orphaned key, before recording a new name",
      path: ["pendingRecorded"] as Step[],
    },
  ])("killed again $at: the orphan is revoked once found, one key stored", async ({ path }) => {
    const c = await newCase("ak-orphan-crash");
    await c.s.start();
    await c.killAt(["pendingRecorded", "secretCreated"], () => c.apply({}));
    const [orphan] = await c.live();
    expect(orphan).toBeDefined();
    // The second operator finds the orphan by its pending name; it is killed while dealing with it.
    const rule = rig.proxy.arm({ ...steps(c.ns)[path[0]!], action: "hold", times: 1 });
    await c.s.start();
    await rule.waitForHit("the second operator's request");
    await c.s.kill();
    rig.proxy.reset();
    if (path[0] === "secretRead") expect(await c.live()).toEqual([orphan]);
    else expect(await c.live()).toEqual([]);

    await c.s.start();
    const kept = await expectNothingLost(c);
    expect(kept).not.toBe(orphan);
  });
});

describe("killed while replacing a lost key", () => {
  it.each([
    { at: "before revoking the key whose Secret was deleted", path: ["secretRead"] as Step[] },
    { at: "after revoking it, before forgetting it", path: ["keyForgotten"] as Step[] },
  ])("killed $at: the old key is revoked, a new one stored", async ({ path }) => {
    const c = await newCase("ak-replace-crash");
    await c.s.start();
    await c.apply({});
    const original = await expectNothingLost(c);
    const originalValue = (await c.stored())!.value;
    await c.killAt(path, () =>
      kubectl(["delete", "secret", "svc-api-key", "-n", c.ns]).then(() => undefined),
    );
    expect(await c.live()).toEqual(path[0] === "secretRead" ? [original] : []);
    expect((await c.get())?.status?.keyId).toBe(original);

    await c.s.start();
    // A new key recorded (between forgetting the old key and storing the new one, status has no
    // key while Ready still says True from before).
    const fresh = await expectNothingLost(
      c,
      (o) => o.status?.keyId !== undefined && o.status.keyId !== original,
    );
    expect(fresh).not.toBe(original);
    expect(await authenticates({ platform }, originalValue)).toBe(false);
  });
});

describe("killed while deleting", () => {
  it.each([
    { at: "before revoking the key", path: ["secretRead"] as Step[] },
    { at: "after revoking the key, before deleting its Secret", path: ["secretDeleted"] as Step[] },
  ])("killed $at: the key is revoked, the Secret and the ApiKey are gone", async ({ path }) => {
    const c = await newCase("ak-delete-crash");
    await c.s.start();
    await c.apply({});
    const original = await expectNothingLost(c);
    await c.killAt(path, () =>
      kubectl(["delete", "apikey", "svc", "-n", c.ns, "--wait=false"]).then(() => undefined),
    );
    expect(await c.live()).toEqual(path[0] === "secretRead" ? [original] : []);

    await c.s.start();
    await eventually(async () => ((await c.get()) === undefined ? true : undefined), {
      what: "the ApiKey gone",
    });
    expect(await c.live()).toEqual([]);
    expect(await kube.get(secretKind, c.ns, "svc-api-key")).toBeUndefined();
  });
});

describe("killed while rotating", () => {
  // "before pending" and "after pending, before create" as above; "before revoking the
  // previous key" is any moment of the grace period, caught at the first Secret read after
  // the rotation's status write (every pass reads the Secret before it may revoke).
  const cases: { at: string; path: Step[] }[] = [
    { at: "before the pending key name is recorded", path: ["pendingRecorded"] },
    { at: "after the pending name, before the create", path: ["pendingRecorded", "secretRead"] },
    { at: "after the create, before the Secret write", path: ["pendingRecorded", "secretReplaced"] },
    { at: "after the Secret write, before the status", path: ["pendingRecorded", "keyRecorded"] },
    { at: "after the status, before Ready", path: ["pendingRecorded", "keyRecorded", "readyRecorded"] },
    {
      at: "in the grace period, before revoking the previous key",
      path: ["pendingRecorded", "keyRecorded", "secretRead"],
    },
    {
      at: "after revoking the previous key, before the status",
      path: ["pendingRecorded", "keyRecorded", "previousCleared"],
    },
  ];

  it.each(cases)("killed $at: one working key in the Secret, the old one revoked", async ({ path }) => {
    const c = await newCase("ak-rotate-crash");
    await c.s.start();
    await c.apply({ rotation: { interval: "1h", gracePeriod: "3s" } });
    const original = await expectNothingLost(c);
    const originalValue = (await c.stored())!.value;

    // Shortening the interval makes the rotation due in 5 s (the shortest the schema allows).
    await c.killAt(path, () => c.apply({ rotation: { interval: "5s", gracePeriod: "3s" } }));
    const last = path.at(-1);
    const live = await c.live();
    if (last === "secretReplaced" || last === "keyRecorded" || (last === "secretRead" && path.length > 2))
      expect(live).toContain(original); // the new key exists and the old one still works
    if (last === "previousCleared") expect(live).not.toContain(original);

    // Back to an hourly schedule, so the end state is quiet; whatever the crash left is finished first.
    await c.apply({ rotation: { interval: "1h", gracePeriod: "3s" } });
    await c.s.start();
    const soon = Date.now() + 30 * 60_000;
    const rotated = await expectNothingLost(
      c,
      (o) => o.status?.keyId !== original && new Date(o.status?.nextRotationAt ?? 0).getTime() > soon,
    );
    expect(rotated).not.toBe(original);
    expect(await authenticates({ platform }, originalValue)).toBe(false);
    await c.s.kill();
  });
});

describe("secrecy", () => {
  it("no key value appears in any operator's log, in Events or in ApiKey status", async () => {
    const values = [...seenValues];
    expect(values.length).toBeGreaterThan(10);
    expect(rig.lines.length).toBeGreaterThan(0);
    const logs = rig.lines.join("\n");
    const events = JSON.stringify(
      await Promise.all(rig.namespaces.map((ns) => kube.list(eventKind, { namespace: ns }))),
    );
    expect(events).toContain('"reason"'); // Events were recorded, so the check means something
    const objects = JSON.stringify(
      await Promise.all(rig.namespaces.map((ns) => kube.list(apiKeys, { namespace: ns }))),
    );
    for (const value of values) {
      for (const form of [value, Buffer.from(value).toString("base64")]) {
        expect(logs.includes(form), "a key value in an operator's log").toBe(false);
        expect(events.includes(form), "a key value in an Event").toBe(false);
        expect(objects.includes(form), "a key value in an ApiKey").toBe(false);
      }
    }
  });
});
