// The connection Secret's decisions, without an API server: what a pass does for which Secret and
// status, what the Secret holds, and how a platform URI is read.
import { describe, expect, it } from "vitest";
import { parseConnectionUri } from "./secrets.ts";
import {
  connectionOf,
  connectionSecretData,
  isCurrent,
  secretStep,
  type SecretFacts,
  passwordOf,
  passwordOfAnnotation,
  connectionOfAnnotation,
  branchResetAnnotation,
  type SecretTarget,
} from "./secret-data.ts";

const facts = (f: Partial<SecretFacts>): SecretFacts => ({
  current: false,
  exists: false,
  recorded: undefined,
  rotateAt: undefined,
  ...f,
});
const written = { name: "db", role: "app", database: "shop" };

describe("what a pass does about the connection Secret", () => {
  it.each<[string, Partial<SecretFacts>, ReturnType<typeof secretStep>]>([
    ["no Secret yet: read the password", {}, { step: "read" }],
    [
      "current Secret: nothing, no request",
      { current: true, exists: true, recorded: written },
      { step: "none" },
    ],
    [
      "Secret written for another role or host: read again",
      { current: false, exists: true, recorded: written },
      { step: "read" },
    ],
    [
      "a new rotatePasswordAt value once the Secret exists: reset",
      { current: true, exists: true, recorded: { ...written, passwordRotatedAt: "1" }, rotateAt: "2" },
      { step: "reset", why: "Rotation" },
    ],
    [
      "the rotatePasswordAt value already acted upon: nothing",
      { current: true, exists: true, recorded: { ...written, passwordRotatedAt: "2" }, rotateAt: "2" },
      { step: "none" },
    ],
    ["the annotation present before the first Secret: read, no reset", { rotateAt: "1" }, { step: "read" }],
    [
      "a rotation whose new password was lost: reset again",
      { current: true, exists: true, recorded: { ...written, passwordReset: "Rotation" }, rotateAt: "2" },
      { step: "reset", why: "Rotation" },
    ],
    [
      "a consented reset whose new password was lost: read, else reset again",
      { current: true, exists: true, recorded: { ...written, passwordReset: "NotStored" } },
      { step: "read", orReset: "NotStored" },
    ],
  ])("%s", (_, f, expected) => {
    expect(secretStep(facts(f))).toEqual(expected);
  });
});

const target: SecretTarget = {
  name: "db",
  projectId: "proj",
  branchId: "br-main",
  endpointId: "ep-a-b-12345678",
  host: "ep-a-b-12345678.us-east-2.aws.neon.tech",
  pooledHost: "ep-a-b-12345678-pooler.us-east-2.aws.neon.tech",
  role: "app",
  database: "shop",
};

describe("the Secret", () => {
  it("holds the keys drivers and frameworks read, with a password that needs escaping in URLs", () => {
    const data = connectionSecretData({
      host: target.host,
      port: 5432,
      pooledHost: target.pooledHost,
      pooledPort: 5432,
      user: "app",
      password: "p@ss/w:rd",
      database: "shop",
      sslmode: "require",
    });
    expect(Object.keys(data).sort()).toEqual([
      "DATABASE_URL",
      "DATABASE_URL_POOLED",
      "PGDATABASE",
      "PGHOST",
      "PGPASSWORD",
      "PGPORT",
      "PGSSLMODE",
      "PGUSER",
    ]);
    expect(data.DATABASE_URL).toBe(
      `postgresql://app:p%40ss%2Fw%3Ard@${target.host}:5432/shop?sslmode=require`,
    );
    expect(data.DATABASE_URL_POOLED).toBe(
      `postgresql://app:p%40ss%2Fw%3Ard@${target.pooledHost}:5432/shop?sslmode=require`,
    );
    expect(data.PGPASSWORD).toBe("p@ss/w:rd");
    // What a driver reads back from the URL is what was stored.
    const back = parseConnectionUri(data.DATABASE_URL ?? "");
    expect(back).toMatchObject({ user: "app", password: "p@ss/w:rd", database: "shop", port: 5432 });
  });

  it("reads a platform URI without a port as the standard port, and keeps its sslmode", () => {
    expect(parseConnectionUri(`postgresql://app:secret@${target.host}/shop?sslmode=verify-full`)).toEqual({
      host: target.host,
      port: 5432,
      user: "app",
      password: "secret",
      database: "shop",
      sslmode: "verify-full",
    });
  });

  it("never quotes an unreadable URI (it carries the password)", () => {
    expect(() => parseConnectionUri("not a uri with hunter2")).toThrow(/could not be read$/);
  });

  it("is current only for the same role, branch, hosts and database", () => {
    const secret = (t: SecretTarget) => ({
      metadata: {
        annotations: { [passwordOfAnnotation]: passwordOf(t), [connectionOfAnnotation]: connectionOf(t) },
      },
    });
    expect(isCurrent(secret(target), target)).toBe(true);
    expect(isCurrent(secret(target), { ...target, branchId: "br-other" })).toBe(false);
    expect(isCurrent(secret(target), { ...target, database: "other" })).toBe(false);
    expect(isCurrent(secret(target), { ...target, host: "ep-x.example" })).toBe(false);
    expect(isCurrent(undefined, target)).toBe(false);
  });

  it("is not current once its branch was reset after it was written", () => {
    const written = (branchReset?: string) => ({
      metadata: {
        annotations: {
          [passwordOfAnnotation]: passwordOf(target),
          [connectionOfAnnotation]: connectionOf(target),
          ...(branchReset === undefined ? {} : { [branchResetAnnotation]: branchReset }),
        },
      },
    });
    const reset = "2026-11-23T05:00:00Z first";
    expect(isCurrent(written(), { ...target, branchReset: reset })).toBe(false);
    expect(isCurrent(written(reset), { ...target, branchReset: reset })).toBe(true);
    expect(isCurrent(written(reset), { ...target, branchReset: "2026-11-23T06:00:00Z again" })).toBe(false);
  });
});
