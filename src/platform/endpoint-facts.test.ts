import { describe, expect, it } from "vitest";
import { maxConnectionsFor, pooledHost } from "./endpoint-facts.ts";

describe("what the platform derives from an endpoint", () => {
  it("puts -pooler after the endpoint id in its host, in the platform's and the emulator's forms", () => {
    expect(
      pooledHost({ id: "ep-cool-dawn-12345678", host: "ep-cool-dawn-12345678.us-east-2.aws.neon.tech" }),
    ).toBe("ep-cool-dawn-12345678-pooler.us-east-2.aws.neon.tech");
    expect(pooledHost({ id: "ep-a-1", host: "other-name.localtest.me" })).toBe(
      "other-name-pooler.localtest.me",
    );
  });

  it("knows max_connections from the Limits table, and no figure above 8 CU", () => {
    expect(maxConnectionsFor(0.25)).toBe(112);
    expect(maxConnectionsFor(8)).toBe(3604);
    expect(maxConnectionsFor(10)).toBeUndefined();
  });
});
