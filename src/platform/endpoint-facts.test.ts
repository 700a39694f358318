import { describe, expect, it } from "vitest";
import { endpointOfHost, maxConnectionsFor, pooledHost } from "./endpoint-facts.ts";

describe("what the platform derives from an endpoint", () => {
  it("puts -pooler after the endpoint id in its host, in the platform's and the emulator's forms", () => {
    expect(
      pooledHost({ id: "ep-cool-dawn-12345678", host: "ep-cool-dawn-12345678.us-east-2.aws.neon.tech" }),
    ).toBe("ep-cool-dawn-12345678-pooler.us-east-2.aws.neon.tech");
    expect(pooledHost({ id: "ep-a-1", host: "other-name.localtest.me" })).toBe(
      "other-name-pooler.localtest.me",
    );
  });

  it("reads the endpoint a host names in the platform's form, and none from a host of another form", () => {
    expect(endpointOfHost("ep-cool-dawn-12345678.us-east-2.aws.neon.tech")).toBe("ep-cool-dawn-12345678");
    expect(endpointOfHost("ep-cool-dawn-12345678.c-2.us-east-2.aws.neon.tech")).toBe("ep-cool-dawn-12345678");
    // The pooler's host, a local Postgres, a proxy: which endpoint they serve only a list says.
    expect(endpointOfHost("ep-cool-dawn-12345678-pooler.us-east-2.aws.neon.tech")).toBeUndefined();
    expect(endpointOfHost("127.0.0.1")).toBeUndefined();
    expect(endpointOfHost("localhost")).toBeUndefined();
    expect(endpointOfHost("db.internal.example.com")).toBeUndefined();
    expect(endpointOfHost("ep-cool-dawn-12345678")).toBeUndefined();
  });

  it("knows max_connections from the Limits table, and no figure above 8 CU", () => {
    expect(maxConnectionsFor(0.25)).toBe(112);
    expect(maxConnectionsFor(8)).toBe(3604);
    expect(maxConnectionsFor(10)).toBeUndefined();
  });
});
