// What a metadata-only cache keeps of an object: its metadata, without the two copies of its
// content that metadata can carry.
import { describe, expect, it } from "vitest";
import { lastAppliedAnnotation, metadataOnly } from "./transform.ts";

describe("metadataOnly", () => {
  it("keeps metadata, and drops the data, managedFields and kubectl's last-applied copy", () => {
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: "app-tls",
        namespace: "team-b",
        labels: { app: "shop" },
        annotations: { team: "b", [lastAppliedAnnotation]: '{"stringData":{"tls.key":"not-a-key"}}' },
        managedFields: [{ manager: "kubectl" }],
      },
      data: { "tls.key": "bm90LWEta2V5" },
    };
    const before = JSON.stringify(secret);
    expect(metadataOnly(secret)).toEqual({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "app-tls", namespace: "team-b", labels: { app: "shop" }, annotations: { team: "b" } },
    });
    expect(JSON.stringify(secret), "the input is left as it was").toBe(before);
  });

  it("leaves annotations alone when there is no last-applied copy", () => {
    const obj = { apiVersion: "v1", kind: "Secret", metadata: { name: "a", annotations: { team: "b" } } };
    expect(metadataOnly(obj).metadata.annotations).toEqual({ team: "b" });
  });
});
