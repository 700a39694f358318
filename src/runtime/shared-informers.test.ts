// Which informers the controllers of one manager share: the same kind watched the same way is one
// informer; another shape of watch, or an informer already started, is another.
import { KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { KubeClient, type ResourceKind } from "./kube.ts";
import { SharedInformers } from "./shared-informers.ts";
import { metadataOnly } from "./transform.ts";

const secrets: ResourceKind = { group: "", version: "v1", plural: "secrets", kind: "Secret" };
const projects: ResourceKind = {
  group: "neoncloud.dev",
  version: "v1alpha1",
  plural: "projects",
  kind: "Project",
};

function informers(): SharedInformers {
  const kc = new KubeConfig();
  // Never reached: no informer here lists before it is stopped.
  kc.loadFromOptions({
    clusters: [{ name: "c", server: "https://127.0.0.1:1", skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return new SharedInformers(new KubeClient(kc));
}

describe("shared informers", () => {
  it("give every controller watching a kind the same way one informer", () => {
    const shared = informers();
    const first = shared.informer(secrets, {
      namespaces: ["a", "b"],
      metadataOnly: true,
      watchdogMs: 90_000,
    });
    // Options written in another order, namespaces too: the same watch.
    const again = shared.informer(secrets, {
      watchdogMs: 90_000,
      metadataOnly: true,
      namespaces: ["b", "a"],
    });
    expect(again).toBe(first);
    expect(shared.informer(projects, { namespaces: ["a", "b"] })).not.toBe(first);
    expect(shared.all).toHaveLength(2);
  });

  it("keep watches of another shape apart: whole objects, other namespaces, another selector or transform", () => {
    const shared = informers();
    const base = shared.informer(secrets, { namespaces: ["a"], metadataOnly: true });
    const others = [
      shared.informer(secrets, { namespaces: ["a"] }),
      shared.informer(secrets, { namespaces: ["b"], metadataOnly: true }),
      shared.informer(secrets, { namespaces: ["a"], metadataOnly: true, labelSelector: "app=x" }),
      shared.informer(secrets, { namespaces: ["a"], metadataOnly: true, transform: metadataOnly }),
    ];
    expect(new Set([base, ...others]).size).toBe(5);
    // The same transform is the same cache.
    expect(shared.informer(secrets, { namespaces: ["a"], metadataOnly: true, transform: metadataOnly })).toBe(
      others[3],
    );
  });

  it("hold one index for readers indexing a kind by the same function under the same name", () => {
    const informer = informers().informer(projects, {});
    const holds = (o: { metadata: { name?: string } }) => [o.metadata.name ?? ""];
    expect(informer.addSharedIndex("holds", holds)).toBe("holds");
    expect(informer.addSharedIndex("holds", holds)).toBe("holds");
    // Another function under that name is an index of its own.
    expect(informer.addSharedIndex("holds", (o) => [o.metadata.uid ?? ""])).toBe("holds#2");
  });

  it("make a new informer for a kind whose informer already started (it would miss its first list)", async () => {
    const shared = informers();
    const started = shared.informer(projects, {});
    started.start();
    const later = shared.informer(projects, {});
    expect(later).not.toBe(started);
    expect(started.started).toBe(true);
    expect(shared.all).toEqual([started, later]);
    await shared.stop();
  });
});
