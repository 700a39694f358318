// Every kind this operator serves has its RBAC: the operator may reconcile it, people may be
// given it through the aggregated roles. A new kind added to src/api/index.ts without its plural
// in src/api/rbac.ts fails here before it ships without rights.
import { describe, expect, it } from "vitest";
import { kinds } from "./index.ts";
import { clusterResources, namespacedResources, operatorRules, userRoles } from "./rbac.ts";

const all: readonly string[] = [...namespacedResources, ...clusterResources];

describe.each(kinds.map((k) => [k.kind, k.plural] as const))("%s", (_kind, plural) => {
  it("is named in src/api/rbac.ts", () => {
    expect(all).toContain(plural);
  });

  it("is granted to the operator, with its status and finalizers, or to cluster administrators only", () => {
    const granted = operatorRules.flatMap((r) => r.resources);
    if ((namespacedResources as readonly string[]).includes(plural)) {
      expect(granted).toEqual(expect.arrayContaining([plural, `${plural}/status`, `${plural}/finalizers`]));
    } else {
      const admin = userRoles.find((r) => r.name === "admin")!.rules.flatMap((r) => r.resources);
      expect(admin).toContain(plural);
    }
  });
});
