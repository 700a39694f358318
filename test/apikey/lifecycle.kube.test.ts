// An ApiKey's life as a team sees it: the key appears in a Secret and works;
// a lost or edited Secret gets a new key; deleting revokes (or retains);
// credentials can come from another ApiKey's Secret; and no key value ever
// shows up in logs, events or status.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubectl, eventually } from "../support/kube.ts";
import { apiKeyResourceKind } from "../../src/controllers/apikey/index.ts";
import { secretKind, type Secret } from "../../src/controllers/managed/credentials.ts";
import { credentialsSecretManifest } from "../support/credentials.ts";
import { ContentType } from "../../src/runtime/index.ts";
import {
  type ApiKeyWorld,
  authenticates,
  expectNoKeyValueLeaked,
  liveKeys,
  startApiKeyWorld,
} from "./harness.ts";

let world: ApiKeyWorld;

/** Removes an ApiKey's status, as a restore from a backup without status leaves it. */
async function wipeStatus(namespace: string, name: string): Promise<void> {
  await kubectl([
    "patch",
    "apikey",
    name,
    "-n",
    namespace,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status: null }),
  ]);
}

beforeAll(async () => {
  world = await startApiKeyWorld();
});

afterAll(async () => {
  await world.close();
});

describe("an ApiKey on the real API server and the emulator", () => {
  it("creates a key into a labelled, owned Secret; deleting the ApiKey revokes the key", async () => {
    const s = await world.scenario("ak-create");
    await s.start();
    await s.create("ci");
    const ready = await s.waitReady("ci");
    expect(ready.status?.secretName).toBe("ci-api-key");
    expect(ready.status?.keyName).toMatch(/^ci-[0-9a-f]{6}-[a-z0-9]{6}$/);
    expect(ready.metadata.finalizers).toContain("neoncloud.dev/apikey");

    const stored = await s.stored("ci-api-key");
    expect(stored?.keyId).toBe(ready.status?.keyId);
    expect(await authenticates(world, stored!.value)).toBe(true);
    const secret = await s.secret("ci-api-key");
    expect(secret?.metadata.labels).toMatchObject({
      "app.kubernetes.io/managed-by": "neon-cloud-operator",
      "neoncloud.dev/apikey": "ci",
    });
    expect(secret?.metadata.ownerReferences?.[0]).toMatchObject({
      kind: "ApiKey",
      name: "ci",
      controller: true,
    });
    // Written by server-side apply under the operator's field manager, so the operator owns its
    // entries and a Secret that appears between a read and the write is no create conflict.
    const managers = ((secret?.metadata as { managedFields?: unknown[] } | undefined)?.managedFields ??
      []) as { manager?: string; operation?: string }[];
    expect(managers.filter((m) => m.operation === "Apply").map((m) => m.manager)).toEqual([
      "neon-cloud-operator",
    ]);

    // Usage figures come from the shared key list once the key has been used.
    await eventually(async () => (await s.get("ci"))?.status?.lastUsedAt, { what: "lastUsedAt" });

    await kubectl(["delete", "apikey", "ci", "-n", s.namespace, "--wait=true", "--timeout=30s"]);
    expect(await authenticates(world, stored!.value)).toBe(false);
    expect(await s.secret("ci-api-key")).toBeUndefined();
    expect(await liveKeys(world, "ci")).toEqual([]);
  });

  it("a deleted Secret gets a new key, the old key is revoked, and a Warning says so", async () => {
    const s = await world.scenario("ak-lost");
    await s.start();
    await s.create("app", { keyName: "app-key", secretName: "app-credentials" });
    const first = await s.waitReady("app");
    const old = (await s.stored("app-credentials"))!;

    await world.kube.delete(secretKind, s.namespace, "app-credentials");
    const replaced = await s.waitReady("app", (o) => o.status?.keyId !== first.status?.keyId);
    const fresh = await eventually(() => s.stored("app-credentials"), { what: "the new Secret" });
    expect(fresh.keyId).toBe(replaced.status?.keyId);
    expect(await authenticates(world, fresh.value)).toBe(true);
    expect(await authenticates(world, old.value)).toBe(false);
    const warnings = await eventually(async () => {
      const events = await s.events();
      return events.some((e) => e.reason === "SecretReplaced" && e.type === "Warning") ? events : undefined;
    });
    expect(warnings.length).toBeGreaterThan(0);
    expect((await liveKeys(world, "app-key")).map((k) => k.id)).toEqual([fresh.keyId]);
  });

  it("a Secret whose key was edited gets a working key again", async () => {
    const s = await world.scenario("ak-edit");
    await s.start();
    await s.create("edited");
    const first = await s.waitReady("edited");
    const old = (await s.stored("edited-api-key"))!;
    await world.kube.patch<Secret>(
      secretKind,
      s.namespace,
      "edited-api-key",
      { stringData: { apiKey: "not-a-key" } },
      ContentType.MergePatch,
    );
    await s.waitReady("edited", (o) => o.status?.keyId !== first.status?.keyId);
    const fresh = await eventually(async () => {
      const stored = await s.stored("edited-api-key");
      return stored && stored.value !== "not-a-key" ? stored : undefined;
    });
    expect(await authenticates(world, fresh.value)).toBe(true);
    expect(await authenticates(world, old.value)).toBe(false);
  });

  it("a status wiped (a restore from a backup without status) takes the key back from its Secret", async () => {
    const s = await world.scenario("ak-wiped");
    await s.start();
    await s.create("restored");
    const first = await s.waitReady("restored");
    const stored = (await s.stored("restored-api-key"))!;
    await wipeStatus(s.namespace, "restored");
    const again = await s.waitReady("restored", (o) => o.status?.keyId !== undefined);
    expect(again.status?.keyId).toBe(first.status?.keyId);
    expect((await s.stored("restored-api-key"))?.keyId).toBe(stored.keyId);
    expect(await authenticates(world, stored.value)).toBe(true);
    // No second key was issued, so none is live in nobody's hands.
    expect((await liveKeys(world, "restored")).map((k) => k.id)).toEqual([stored.keyId]);
  });

  it("a status wiped during a rotation's grace period still revokes the previous key", async () => {
    const s = await world.scenario("ak-wiped-rotation");
    await s.start();
    // A grace period nearly as long as the interval: a previous key is live most of the time.
    await s.create("rotating", { rotation: { interval: "8s", gracePeriod: "7s" } });
    const rotated = await s.waitReady("rotating", (o) => o.status?.previousKeyId !== undefined);
    const previous = rotated.status!.previousKeyId!;
    await wipeStatus(s.namespace, "rotating");
    // Nothing in the Secret names the previous key; it is found by its name on the platform.
    await eventually(
      async () => ((await liveKeys(world, "rotating")).some((k) => k.id === previous) ? undefined : true),
      { what: `previous key ${previous} revoked after the wipe`, timeoutMs: 30_000 },
    );
    const stored = (await s.stored("rotating-api-key"))!;
    expect(await authenticates(world, stored.value)).toBe(true);
  });

  it("two ApiKeys of one name in two namespaces: a wiped status takes back only its own key", async () => {
    // The default keyName is the resource's name, which another namespace may share.
    const mine = await world.scenario("ak-twin-a");
    const theirs = await world.scenario("ak-twin-b");
    await mine.start();
    await theirs.start();
    await mine.create("twin");
    await theirs.create("twin");
    const myFirst = await mine.waitReady("twin");
    const theirFirst = await theirs.waitReady("twin");
    const myKey = (await mine.stored("twin-api-key"))!;
    const theirKey = (await theirs.stored("twin-api-key"))!;
    await wipeStatus(mine.namespace, "twin");
    // Recovered, and any previous key it believed its own (no rotation: no grace period) dealt with.
    const recovered = await mine.waitReady(
      "twin",
      (o) => o.status?.keyId !== undefined && o.status.previousKeyId === undefined,
    );
    expect(recovered.status?.keyId).toBe(myFirst.status?.keyId);
    expect(await authenticates(world, myKey.value)).toBe(true);
    // The other namespace's key is neither taken nor revoked.
    expect(await authenticates(world, theirKey.value)).toBe(true);
    expect((await theirs.get("twin"))?.status?.keyId).toBe(theirFirst.status?.keyId);
    expect((await theirs.stored("twin-api-key"))?.keyId).toBe(theirKey.keyId);
    expect((await liveKeys(world, "twin")).map((k) => k.id).sort()).toEqual(
      [myKey.keyId, theirKey.keyId].sort(),
    );
  });

  it("an ApiKey deleted after its status was wiped still revokes the key in its Secret", async () => {
    const s = await world.scenario("ak-wiped-delete");
    const controller = await s.start();
    await s.create("gone");
    const ready = await s.waitReady("gone");
    const stored = (await s.stored("gone-api-key"))!;
    // Restored from a backup without status while no operator runs, then deleted at once.
    await s.stop(controller);
    await wipeStatus(s.namespace, "gone");
    await kubectl(["delete", "apikey", "gone", "-n", s.namespace, "--wait=false"]);
    await s.start();
    await eventually(async () => ((await s.get("gone")) === undefined ? true : undefined), {
      what: "the ApiKey gone",
    });
    expect(ready.status?.keyId).toBe(stored.keyId);
    expect(await authenticates(world, stored.value)).toBe(false);
    expect(await liveKeys(world, "gone")).toEqual([]);
  });

  it("an ApiKey restored from a backup with a new UID takes back its Secret and key", async () => {
    const s = await world.scenario("ak-new-uid");
    const controller = await s.start();
    await s.create("reborn", { deletionPolicy: "Revoke" });
    const first = await s.waitReady("reborn");
    const stored = (await s.stored("reborn-api-key"))!;
    // A restore as Velero makes it: the ApiKey without status, finalizers or UID; its Secret
    // without owner references. The platform key still exists.
    await s.stop(controller);
    const saved = (await s.secret("reborn-api-key"))!;
    await world.kube.patch(
      apiKeyResourceKind,
      s.namespace,
      "reborn",
      { metadata: { finalizers: null } },
      ContentType.MergePatch,
    );
    await kubectl(["delete", "apikey", "reborn", "-n", s.namespace]);
    // The garbage collector may have taken it with its owner already.
    await kubectl(["delete", "secret", "reborn-api-key", "-n", s.namespace, "--ignore-not-found"]);
    await world.kube.create(secretKind, {
      metadata: { name: saved.metadata.name, namespace: s.namespace, labels: saved.metadata.labels },
      data: saved.data,
    });
    await s.create("reborn", { deletionPolicy: "Revoke" });
    const uid = (await s.get("reborn"))?.metadata.uid;
    expect(uid).not.toBe(first.metadata.uid);
    await s.start();
    const again = await s.waitReady("reborn", (o) => o.status?.keyId !== undefined);
    expect(again.status?.keyId).toBe(stored.keyId);
    expect(await authenticates(world, stored.value)).toBe(true);
    expect((await liveKeys(world, "reborn")).map((k) => k.id)).toEqual([stored.keyId]);
    const secret = await s.secret("reborn-api-key");
    expect(secret?.metadata.ownerReferences?.map((r) => r.uid)).toEqual([uid]);
    // It is this ApiKey's again: deleting it revokes the key.
    await kubectl(["delete", "apikey", "reborn", "-n", s.namespace, "--wait=false"]);
    await eventually(async () => ((await s.get("reborn")) === undefined ? true : undefined), {
      what: "the reborn ApiKey gone",
    });
    expect(await authenticates(world, stored.value)).toBe(false);
  });

  it("Retain keeps the key and its Secret after the ApiKey is gone", async () => {
    const s = await world.scenario("ak-retain");
    await s.start();
    await s.create("keep", { deletionPolicy: "Retain" });
    await s.waitReady("keep");
    const stored = (await s.stored("keep-api-key"))!;
    await kubectl(["delete", "apikey", "keep", "-n", s.namespace, "--wait=true", "--timeout=30s"]);
    const secret = await s.secret("keep-api-key");
    expect(secret).toBeDefined();
    expect(secret?.metadata.ownerReferences ?? []).toEqual([]);
    expect(await authenticates(world, stored.value)).toBe(true);
  });

  it("an ApiKey can take its credentials from another ApiKey's Secret", async () => {
    const s = await world.scenario("ak-chain");
    await s.start();
    await s.create("parent");
    await s.waitReady("parent");
    await s.create("child", { credentials: { secretName: "parent-api-key" } });
    await s.waitReady("child");
    const child = (await s.stored("child-api-key"))!;
    expect(await authenticates(world, child.value)).toBe(true);
  });

  it("missing credentials show as CredentialsNotFound and clear as soon as the Secret appears", async () => {
    const s = await world.scenario("ak-creds");
    // A long retry, so only the Secret watch can make this pass in time.
    await s.start();
    await s.create("late", { credentials: { secretName: "team-key" } });
    const waiting = await eventually(async () => {
      const ready = (await s.get("late"))?.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === "False" ? ready : undefined;
    });
    expect(waiting.reason).toBe("CredentialsNotFound");
    await world.kube.create(
      secretKind,
      credentialsSecretManifest("team-key", world.platform.emulator.bootstrapKey, { namespace: s.namespace }),
    );
    await s.waitReady("late");
  });

  it("a refused operator key shows as Unauthorized with a clear Warning, and is retried slowly", async () => {
    const s = await world.scenario("ak-401");
    await world.kube.patch<Secret>(
      secretKind,
      s.namespace,
      "neon-operator-credentials",
      { stringData: { apiKey: "revoked-or-wrong" } },
      ContentType.MergePatch,
    );
    await s.start();
    await s.create("refused");
    const refused = await eventually(async () => {
      const ready = (await s.get("refused"))?.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === "False" ? ready : undefined;
    });
    expect(refused.reason).toBe("Unauthorized");
    await eventually(async () =>
      (await s.events()).find((e) => e.reason === "OperatorCredentialsRejected" && e.type === "Warning"),
    );
    // Retried in minutes, not in a loop: in the next two seconds the refused key is not sent again
    // (a backoff loop would have sent it about ten times by then).
    const refusals = async () =>
      Object.values((await world.platform.counters()).by_route).reduce(
        (n, byStatus) => n + (byStatus?.["401"] ?? 0),
        0,
      );
    const before = await refusals();
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await refusals()).toBe(before);
  });
});

describe("secrecy", () => {
  it("no key value appears in logs, events or ApiKey status", async () => {
    await expectNoKeyValueLeaked(world);
  });
});
