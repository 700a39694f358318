// Owner marks: what the operator writes on a platform object to say which resource of which
// installation owns it.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../config.ts";
import { ConfigError } from "../../runtime/index.ts";
import { ownerMark, parseOwnerMark } from "./installation.ts";

describe("ownerMark", () => {
  it("is k8s-<installation>-<first 16 hex of sha256(kind/namespace/name)>", () => {
    // sha256("ComputeEndpoint/shop/staging") = 5996a21fbf58c4f7…, by `sha256sum`.
    expect(ownerMark("0a1b2c3d", "ComputeEndpoint", "shop", "staging")).toBe("k8s-0a1b2c3d-5996a21fbf58c4f7");
    expect(ownerMark("0a1b2c3d", "Branch", "shop", "staging")).toBe("k8s-0a1b2c3d-020f7d1b09da0d97");
  });

  it("tells installations, kinds, namespaces and names apart, and nothing else", () => {
    const mark = ownerMark("0a1b2c3d", "ComputeEndpoint", "shop", "staging");
    expect(ownerMark("0a1b2c3d", "ComputeEndpoint", "shop", "staging")).toBe(mark);
    for (const other of [
      ownerMark("ffffffff", "ComputeEndpoint", "shop", "staging"),
      ownerMark("0a1b2c3d", "Branch", "shop", "staging"),
      ownerMark("0a1b2c3d", "ComputeEndpoint", "shop-staging", "x"),
      ownerMark("0a1b2c3d", "ComputeEndpoint", "shop", "staging2"),
    ]) {
      expect(other).not.toBe(mark);
    }
  });

  it("is read back as its installation and digest; a legacy k8s-<uid> name is no mark", () => {
    expect(parseOwnerMark(ownerMark("0a1b2c3d", "Branch", "shop", "staging"))).toEqual({
      installationId: "0a1b2c3d",
      digest: "020f7d1b09da0d97",
    });
    expect(parseOwnerMark("k8s-3f2a9c4e-1b7d-4c2a-9e5f-0a1b2c3d4e5f")).toBeUndefined();
    expect(parseOwnerMark("my-endpoint")).toBeUndefined();
  });
});

describe("--installation-id", () => {
  it("is unset by default, and takes 8 lowercase hex digits from the flag or NEON_OPERATOR_INSTALLATION_ID", () => {
    expect(loadConfig([], {}).installationId).toBeUndefined();
    expect(loadConfig(["--installation-id=0a1b2c3d"], {}).installationId).toBe("0a1b2c3d");
    expect(loadConfig([], { NEON_OPERATOR_INSTALLATION_ID: "deadbeef" }).installationId).toBe("deadbeef");
  });

  it("refuses anything else", () => {
    for (const bad of ["0A1B2C3D", "0a1b2c3", "0a1b2c3d4", "zzzzzzzz"]) {
      expect(() => loadConfig([`--installation-id=${bad}`], {})).toThrow(ConfigError);
    }
  });
});
