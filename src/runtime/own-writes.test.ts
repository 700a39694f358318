// A controller's own writes as its watch echoes them: told apart from anyone else's changes, and
// a cached copy older than its own last write is not reconciled from.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "./kube.ts";
import { OwnWrites } from "./own-writes.ts";

const at = (resourceVersion: string): KubeObject => ({
  metadata: { namespace: "ns", name: "a", resourceVersion },
});

describe("own writes", () => {
  it("an echo of its own write is its own; another version is someone else's change", () => {
    const own = new OwnWrites();
    own.wrote(at("5"));
    expect(own.echoed(at("5"))).toBe(true);
    expect(own.echoed(at("6"))).toBe(false);
  });

  it("a cached copy older than its last write waits for the watch, and is current once it shows it", () => {
    const own = new OwnWrites();
    own.wrote(at("5"));
    expect(own.standing("ns/a", at("4"))).toBe("wait");
    expect(own.standing("ns/a", at("5"))).toBe("current");
  });

  it("an echo that came before the write's own answer, during the reconcile, is not a change", () => {
    const own = new OwnWrites();
    own.begin("ns/a");
    expect(own.holdDuringReconcile(at("5"))).toBe(true);
    own.wrote(at("5"));
    expect(own.end("ns/a")).toBe(false);
    // Someone else's change during a reconcile runs it again.
    own.begin("ns/a");
    own.holdDuringReconcile(at("7"));
    expect(own.end("ns/a")).toBe(true);
    // Outside a reconcile nothing is held.
    expect(own.holdDuringReconcile(at("8"))).toBe(false);
  });
});
