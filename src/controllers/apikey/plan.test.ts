// What an ApiKey pass finds due on an existing key, from its status, its Secret and the account's
// key list: the adapter's decisions, with no API server and no platform.
import { describe, expect, it } from "vitest";
import type { ApiKeyStatus } from "../../api/apikey.ts";
import { dueSteps, keyFingerprint, keyToken, pendingKeyName, rotationTime } from "./plan.ts";
import type { Secret } from "../managed/credentials.ts";

const value = "k".repeat(64);
const now = Date.parse("2026-11-22T12:00:00Z");
const hour = 3_600_000;

function secret(keyId: number, keyValue = value): Secret {
  return {
    metadata: { name: "team-api-key", namespace: "ns" },
    data: {
      apiKey: Buffer.from(keyValue).toString("base64"),
      keyId: Buffer.from(String(keyId)).toString("base64"),
    },
  };
}

const current: ApiKeyStatus = { keyId: 7, keyName: "team-abc123", keyFingerprint: keyFingerprint(value) };
const seen = { secret: secret(7), listed: true, now, intervalMs: undefined };

describe("ApiKey: what is due on an existing key", () => {
  it("nothing while the Secret holds the listed current key", () => {
    expect(dueSteps(current, seen)).toEqual([]);
  });

  it.each([
    ["the Secret is gone", { ...seen, secret: undefined }, ["replace"]],
    ["the Secret holds another key id", { ...seen, secret: secret(8) }, ["replace"]],
    [
      "the Secret holds another value under the same id",
      { ...seen, secret: secret(7, "x".repeat(64)) },
      ["replace"],
    ],
    ["the platform no longer lists the key", { ...seen, listed: false }, ["revoked-externally"]],
  ])("a replacement when %s", (_, s, expected) => {
    expect(dueSteps(current, s)).toEqual(expected);
  });

  it("an interrupted create is resumed first", () => {
    expect(dueSteps({ ...current, pendingKeyName: "team-xyz789" }, { ...seen, listed: false })).toEqual([
      "resume",
      "revoked-externally",
    ]);
  });

  it("the previous key is revoked once its grace period is over, not before", () => {
    const rotated = { ...current, previousKeyId: 6, previousKeyRevokeAt: new Date(now + 1).toISOString() };
    expect(dueSteps(rotated, seen)).toEqual([]);
    expect(dueSteps(rotated, { ...seen, now: now + 1 })).toEqual(["revoke-previous"]);
  });

  it("a rotation is due at nextRotationAt, only with a rotation interval", () => {
    const scheduled = { ...current, nextRotationAt: new Date(now).toISOString() };
    expect(dueSteps(scheduled, { ...seen, intervalMs: hour })).toEqual(["rotate"]);
    expect(dueSteps(scheduled, seen)).toEqual([]);
  });
});

describe("ApiKey: when the next rotation is", () => {
  it("none without an interval", () => {
    expect(rotationTime(new Date(now).toISOString(), now, undefined)).toBeUndefined();
  });
  it("one interval from now when newly configured", () => {
    expect(rotationTime(undefined, now, hour)).toBe(new Date(now + hour).toISOString());
  });
  it("kept while within the interval, moved closer when the interval is shortened", () => {
    const inHalf = new Date(now + hour / 2).toISOString();
    expect(rotationTime(inHalf, now, hour)).toBe(inHalf);
    expect(rotationTime(new Date(now + 10 * hour).toISOString(), now, hour)).toBe(
      new Date(now + hour).toISOString(),
    );
  });
});

describe("the names an ApiKey gives its keys", () => {
  it("carry a token of the ApiKey's namespace and name, so namesakes in two namespaces differ", () => {
    expect(keyToken("team-a", "app")).not.toBe(keyToken("team-b", "app"));
    expect(keyToken("team-a", "app")).toBe(keyToken("team-a", "app"));
    expect(pendingKeyName("app", keyToken("team-a", "app"))).toMatch(/^app-[0-9a-f]{6}-[a-z0-9]{6}$/);
  });

  it("fit the platform's 64 characters with the longest keyName (48)", () => {
    expect(pendingKeyName("k".repeat(48), keyToken("ns", "name")).length).toBeLessThanOrEqual(64);
  });
});
