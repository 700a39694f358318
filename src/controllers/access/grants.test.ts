// Who may use the operator's default credentials for what: the decision as a table, then the view
// over cached objects and the watches that wake resources when a grant changes.
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import type { CredentialsGrantSpec } from "../../api/grant.ts";
import { objectKey, type KubeObject, type Store } from "../../runtime/index.ts";
import {
  Grants,
  credentialsGrantResource,
  decideGrant,
  grantWatches,
  namespaceResource,
  selects,
  type GrantRequest,
  type NamespaceFacts,
} from "./grants.ts";

const grant = (spec: z.input<typeof CredentialsGrantSpec>): CredentialsGrantSpec => ({
  projects: [],
  createProjects: false,
  mintApiKeys: false,
  mintProjectApiKeys: false,
  ...spec,
});

const notGranted = (namespace: string, what: string) => ({
  reason: "NotGranted",
  message:
    `the operator's default credentials are not granted to namespace ${namespace}${what}: ` +
    "a cluster administrator can grant them with a CredentialsGrant (docs/security.md), " +
    "or set spec.credentials to a Secret of this namespace",
});

const teamB: NamespaceFacts = { name: "team-b", labels: { team: "b", tier: "dev" } };

describe("decideGrant", () => {
  const cases: [string, CredentialsGrantSpec[], NamespaceFacts, GrantRequest, string | undefined][] = [
    // [scenario, grants, namespace, want, what is missing (undefined: granted)]
    ["no grant at all: nothing", [], teamB, { projectId: "proj-x" }, " for project proj-x"],
    ["no grant, nothing in particular asked", [], teamB, {}, ""],
    [
      "a grant naming the namespace and the project",
      [grant({ namespaces: ["team-b"], projects: ["proj-x"] })],
      teamB,
      { projectId: "proj-x" },
      undefined,
    ],
    [
      "a grant naming the namespace, another project",
      [grant({ namespaces: ["team-b"], projects: ["proj-y"] })],
      teamB,
      { projectId: "proj-x" },
      " for project proj-x",
    ],
    [
      "another namespace's grant for that very project",
      [grant({ namespaces: ["team-a"], projects: ["proj-x"], mintApiKeys: true })],
      teamB,
      { projectId: "proj-x" },
      " for project proj-x",
    ],
    [
      "* grants every project",
      [grant({ namespaces: ["team-b"], projects: ["*"] })],
      teamB,
      { projectId: "proj-anything" },
      undefined,
    ],
    [
      "a grant for the namespace, nothing in particular asked",
      [grant({ namespaces: ["team-b"] })],
      teamB,
      {},
      undefined,
    ],
    [
      "a selector by label that matches",
      [grant({ namespaceSelector: { matchLabels: { team: "b" } }, projects: ["proj-x"] })],
      teamB,
      { projectId: "proj-x" },
      undefined,
    ],
    [
      "a selector by label that does not match",
      [grant({ namespaceSelector: { matchLabels: { team: "a" } }, projects: ["proj-x"] })],
      teamB,
      { projectId: "proj-x" },
      " for project proj-x",
    ],
    [
      "an empty selector selects every namespace",
      [grant({ namespaceSelector: {}, projects: ["proj-x"] })],
      teamB,
      { projectId: "proj-x" },
      undefined,
    ],
    [
      "a selector cannot match a namespace whose labels are unknown",
      [grant({ namespaceSelector: {}, projects: ["proj-x"] })],
      { name: "team-b", labels: undefined },
      { projectId: "proj-x" },
      " for project proj-x",
    ],
    [
      "a name still matches a namespace whose labels are unknown",
      [grant({ namespaces: ["team-b"], projects: ["proj-x"] })],
      { name: "team-b", labels: undefined },
      { projectId: "proj-x" },
      undefined,
    ],
    [
      "grants add up: a project from one, minting from another",
      [
        grant({ namespaces: ["team-b"], projects: ["proj-x"] }),
        grant({ namespaceSelector: { matchLabels: { tier: "dev" } }, mintApiKeys: true }),
      ],
      teamB,
      { projectId: "proj-x", mintApiKeys: true },
      undefined,
    ],
    [
      "a project without minting",
      [grant({ namespaces: ["team-b"], projects: ["proj-x"] })],
      teamB,
      { mintApiKeys: true },
      " for minting API keys",
    ],
    [
      "a project without creating projects",
      [grant({ namespaces: ["team-b"], projects: ["*"] })],
      teamB,
      { createProject: true },
      " for creating projects",
    ],
    [
      "several parts missing are all named",
      [grant({ namespaces: ["team-b"], projects: ["proj-y"] })],
      teamB,
      { projectId: "proj-x", createProject: true, mintApiKeys: true },
      " for project proj-x and for creating projects and for minting API keys",
    ],
    [
      "a key of one granted project, where the grant allows keys of its projects",
      [grant({ namespaces: ["team-b"], projects: ["proj-x"], mintProjectApiKeys: true })],
      teamB,
      { projectId: "proj-x", mintProjectApiKeys: true },
      undefined,
    ],
    [
      "a key of one project is not an account-wide key",
      [grant({ namespaces: ["team-b"], projects: ["proj-x"], mintProjectApiKeys: true })],
      teamB,
      { mintApiKeys: true },
      " for minting API keys",
    ],
    [
      "a key of a project the grant does not name",
      [grant({ namespaces: ["team-b"], projects: ["proj-y"], mintProjectApiKeys: true })],
      teamB,
      { projectId: "proj-x", mintProjectApiKeys: true },
      " for project proj-x",
    ],
    [
      "a key of one project without the grant's leave",
      [grant({ namespaces: ["team-b"], projects: ["proj-x"] })],
      teamB,
      { projectId: "proj-x", mintProjectApiKeys: true },
      " for minting keys of that project",
    ],
    [
      "creating projects and minting granted",
      [grant({ namespaces: ["team-b"], createProjects: true, mintApiKeys: true })],
      teamB,
      { createProject: true, mintApiKeys: true },
      undefined,
    ],
  ];
  it.each(cases)("%s", (_scenario, grants, namespace, want, missing) => {
    const decision = decideGrant(grants, namespace, want);
    expect(decision).toEqual(missing === undefined ? undefined : notGranted(namespace.name, missing));
  });

  it("a refusal names nothing of other namespaces or their grants", () => {
    const others = [grant({ namespaces: ["team-a", "payments"], projects: ["proj-x"], mintApiKeys: true })];
    const message = decideGrant(others, teamB, { projectId: "proj-x", mintApiKeys: true })?.message ?? "";
    expect(message).toContain("team-b");
    for (const other of ["team-a", "payments"]) expect(message).not.toContain(other);
  });
});

describe("selects (metav1.LabelSelector)", () => {
  const labels = { team: "b", tier: "dev" };
  const cases: [string, Parameters<typeof selects>[0], boolean][] = [
    ["{} selects all", {}, true],
    ["matchLabels all present", { matchLabels: { team: "b", tier: "dev" } }, true],
    ["matchLabels one differs", { matchLabels: { team: "b", tier: "prod" } }, false],
    ["In", { matchExpressions: [{ key: "tier", operator: "In", values: ["dev", "test"] }] }, true],
    [
      "In, no value matches",
      { matchExpressions: [{ key: "tier", operator: "In", values: ["prod"] }] },
      false,
    ],
    ["In, label absent", { matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }] }, false],
    ["NotIn", { matchExpressions: [{ key: "tier", operator: "NotIn", values: ["prod"] }] }, true],
    ["NotIn, label absent", { matchExpressions: [{ key: "zone", operator: "NotIn", values: ["a"] }] }, true],
    [
      "NotIn, value listed",
      { matchExpressions: [{ key: "tier", operator: "NotIn", values: ["dev"] }] },
      false,
    ],
    ["Exists", { matchExpressions: [{ key: "team", operator: "Exists" }] }, true],
    ["Exists, absent", { matchExpressions: [{ key: "zone", operator: "Exists" }] }, false],
    ["DoesNotExist", { matchExpressions: [{ key: "zone", operator: "DoesNotExist" }] }, true],
    ["DoesNotExist, present", { matchExpressions: [{ key: "team", operator: "DoesNotExist" }] }, false],
    [
      "labels and expressions must all hold",
      { matchLabels: { team: "b" }, matchExpressions: [{ key: "tier", operator: "In", values: ["prod"] }] },
      false,
    ],
  ];
  it.each(cases)("%s", (_scenario, selector, expected) => {
    expect(selects(selector, labels)).toBe(expected);
  });
});

/** A Store over a fixed list, as an informer's would read. */
function store<T extends KubeObject>(objects: T[]): Store<T> {
  return {
    get: (namespace, name) =>
      objects.find((o) => o.metadata.name === name && o.metadata.namespace === namespace),
    getByKey: (key) => objects.find((o) => objectKey(o) === key),
    list: (namespace) =>
      namespace === undefined ? objects : objects.filter((o) => o.metadata.namespace === namespace),
    byIndex: () => [],
  };
}

const grantObject = (name: string, spec: unknown) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "CredentialsGrant",
  metadata: { name },
  spec,
});
const namespaceObject = (name: string, labels?: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name, ...(labels ? { labels } : {}) },
});

describe("Grants over the cached objects", () => {
  const grants = store([
    grantObject("team-b-alpha", { namespaces: ["team-b"], projects: ["proj-alpha"] }),
    grantObject("dev-minting", { namespaceSelector: { matchLabels: { tier: "dev" } }, mintApiKeys: true }),
    // Stored under some other schema: grants nothing rather than failing every check.
    grantObject("unreadable", { namespaces: "team-c", projects: ["*"] }),
  ]);
  const namespaces = store([namespaceObject("team-b", { tier: "dev" }), namespaceObject("team-c")]);
  const view = new Grants(grants, namespaces);

  it("reads names, labels and defaults from the cached objects", () => {
    expect(view.check("team-b", { projectId: "proj-alpha", mintApiKeys: true })).toBeUndefined();
    expect(view.check("team-b", { projectId: "proj-beta" })?.reason).toBe("NotGranted");
    expect(view.check("team-b", { createProject: true })?.message).toContain("for creating projects");
  });

  it("ignores a grant it cannot read, and a namespace without labels matches no label", () => {
    expect(view.check("team-c", { projectId: "proj-alpha" })?.reason).toBe("NotGranted");
    expect(view.check("team-c", { mintApiKeys: true })?.reason).toBe("NotGranted");
  });

  it("a namespace missing from the cache is refused, not granted by a selector", () => {
    expect(view.check("unknown", { mintApiKeys: true })?.reason).toBe("NotGranted");
  });
});

describe("grantWatches", () => {
  const endpoints = store<KubeObject>(
    ["team-a/web", "team-a/api", "team-b/web", "team-c/db"].map((key) => {
      const [namespace, name] = key.split("/");
      return { metadata: { namespace, name } };
    }),
  );
  const [grantWatch, namespaceWatch] = grantWatches<KubeObject>();

  it("watches CredentialsGrants, and namespaces as metadata only", () => {
    expect(grantWatch?.kind).toEqual(credentialsGrantResource);
    expect(namespaceWatch?.kind).toEqual(namespaceResource);
    expect(namespaceWatch?.metadataOnly).toBe(true);
  });

  it("a grant by name wakes the resources of the namespaces it names", () => {
    const keys = grantWatch?.map(grantObject("g", { namespaces: ["team-a", "team-c"] }), endpoints);
    expect(keys?.sort()).toEqual(["team-a/api", "team-a/web", "team-c/db"]);
  });

  it("a grant with a selector (or one it cannot read) may concern every namespace", () => {
    for (const spec of [{ namespaceSelector: {} }, { namespaces: "not-a-list" }]) {
      expect(grantWatch?.map(grantObject("g", spec), endpoints)).toHaveLength(4);
    }
  });

  it("a namespace's change wakes its own resources", () => {
    expect(namespaceWatch?.map(namespaceObject("team-b", { tier: "prod" }), endpoints)).toEqual([
      "team-b/web",
    ]);
  });
});
