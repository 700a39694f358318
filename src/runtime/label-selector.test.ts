// The selector string as the API server reads it, matched on labels: each operator of the grammar,
// several requirements together, and what is refused with the requirement named.
import { describe, expect, it } from "vitest";
import { parseLabelSelector } from "./label-selector.ts";

const shardA = { "neoncloud.dev/shard": "a", team: "shop" };
const shardB = { "neoncloud.dev/shard": "b" };
const none = {};

describe("a label selector", () => {
  it.each([
    ["neoncloud.dev/shard=a", [true, false, false]],
    ["neoncloud.dev/shard==a", [true, false, false]],
    ["neoncloud.dev/shard!=a", [false, true, true]],
    ["neoncloud.dev/shard in (a, b)", [true, true, false]],
    ["neoncloud.dev/shard notin (a)", [false, true, true]],
    ["neoncloud.dev/shard", [true, true, false]],
    ["!neoncloud.dev/shard", [false, false, true]],
    ["neoncloud.dev/shard=a,team=shop", [true, false, false]],
    ["neoncloud.dev/shard in (a,b),!team", [false, true, false]],
    ["", [true, true, true]],
  ])("%s matches as the API server's would", (text, expected) => {
    const selector = parseLabelSelector(text);
    expect([shardA, shardB, none].map((l) => selector.matches(l))).toEqual(expected);
  });

  it("matches an object without labels as one with none", () => {
    expect(parseLabelSelector("!neoncloud.dev/shard").matches(undefined)).toBe(true);
    expect(parseLabelSelector("neoncloud.dev/shard=a").matches(undefined)).toBe(false);
  });

  it.each([
    ["shard=a,,team=x", "an empty requirement"],
    ["shard in (a", "unbalanced parentheses"],
    ["Shard.Example/x=a", '"Shard.Example/x" is not a label key'],
    ["shard=-a", '"-a" is not a label value'],
    ["shard in (a,b c)", '"b c" is not a label value'],
  ])("refuses %s, naming why", (text, message) => {
    expect(() => parseLabelSelector(text)).toThrow(message);
  });
});
