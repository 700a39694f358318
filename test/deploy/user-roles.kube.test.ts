// The roles for people on the real API server (its ClusterRole aggregation controller fills
// Kubernetes' view, edit and admin with deploy/cluster's roles), asked as the users themselves
// through impersonation (`kubectl --as`), never as cluster-admin: a user bound to edit in one
// namespace creates a ComputeEndpoint there and not in another, never writes its status, and no
// namespace role lets anyone write a CredentialsGrant.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createNamespace, eventually, kubectl } from "../support/kube.ts";
import { repoRoot } from "./render.ts";

/** A user with a role bound in `team` only (and alice's neighbour namespace, where she has nothing). */
const users = { view: "vera", edit: "alice", admin: "adam" } as const;
/** A user bound to admin cluster-wide: a cluster administrator. */
const clusterAdmin = "carol";

let team: string;
let other: string;

const as = (user: string, args: string[], input?: string) =>
  kubectl([`--as=${user}`, ...args], input === undefined ? {} : { input });

/**
 * The API server's answer to "may I <verb> <resource>[/<subresource>] [in <namespace>]", asked as
 * `user` (a SelfSubjectAccessReview, impersonated). Group and resource are named exactly, so the
 * answer holds for kinds whose CRD is not installed yet (Project, CredentialsGrant).
 */
async function may(user: string, verb: string, resource: string, namespace?: string): Promise<boolean> {
  const [plural, subresource] = resource.split("/");
  const review = {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    spec: { resourceAttributes: { group: "neoncloud.dev", resource: plural, subresource, verb, namespace } },
  };
  // --validate=false: kubectl's own schema check would list CRDs, which these users may not.
  const allowed = await as(
    user,
    ["create", "--validate=false", "-f", "-", "-o", "jsonpath={.status.allowed}"],
    JSON.stringify(review),
  );
  return allowed.trim() === "true";
}

const endpoint = (name: string) =>
  JSON.stringify({
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name },
    spec: { projectId: "proj-alpha", branchId: "br-dev" },
  });

beforeAll(async () => {
  // deploy/cluster's roles for people (cluster-scoped, the same content whoever applies them).
  await kubectl(["apply", "-f", join(repoRoot, "deploy", "cluster", "user-roles.yaml")]);
  team = await createNamespace("roles-team");
  other = await createNamespace("roles-other");
  for (const [role, user] of Object.entries(users)) {
    await kubectl([
      "-n",
      team,
      "create",
      "rolebinding",
      `${user}-${role}`,
      `--clusterrole=${role}`,
      `--user=${user}`,
    ]);
  }
  await kubectl([
    "create",
    "clusterrolebinding",
    `${team}-${clusterAdmin}`,
    "--clusterrole=admin",
    `--user=${clusterAdmin}`,
  ]);
  // The aggregation controller adds the rules to view, edit and admin shortly after.
  for (const user of Object.values(users)) {
    await eventually(async () => ((await may(user, "get", "computeendpoints", team)) ? true : undefined), {
      what: `${user} may read ComputeEndpoints once view, edit and admin aggregate deploy/cluster's roles`,
    });
  }
});

afterAll(async () => {
  await kubectl(["delete", "namespace", team, other, "--wait=false"]).catch(() => "");
  await kubectl(["delete", "clusterrolebinding", `${team}-${clusterAdmin}`, "--ignore-not-found"]).catch(
    () => "",
  );
});

describe("a user bound to edit in one namespace", () => {
  test("creates a ComputeEndpoint there", async () => {
    await as(users.edit, ["-n", team, "apply", "-f", "-"], endpoint("web"));
    expect((await kubectl(["-n", team, "get", "computeendpoint", "web", "-o", "name"])).trim()).toBe(
      "computeendpoint.neoncloud.dev/web",
    );
  });

  test("cannot create one in another namespace", async () => {
    await expect(as(users.edit, ["-n", other, "apply", "-f", "-"], endpoint("web"))).rejects.toThrow(
      /forbidden/i,
    );
    expect(await kubectl(["-n", other, "get", "computeendpoints", "-o", "name"])).toBe("");
  });

  test("cannot write the status the operator reports", async () => {
    await expect(
      as(users.edit, [
        "-n",
        team,
        "patch",
        "computeendpoint",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"endpointId":"ep-someone-elses"}}',
      ]),
    ).rejects.toThrow(/forbidden/i);
    expect(
      await kubectl(["-n", team, "get", "computeendpoint", "web", "-o", "jsonpath={.status.endpointId}"]),
    ).toBe("");
  });

  test.each(["computeendpoints", "branches", "apikeys", "projects", "snapshots"])(
    "may create, change and delete %s in that namespace only",
    async (resource) => {
      for (const verb of ["create", "update", "patch", "delete"]) {
        expect(await may(users.edit, verb, resource, team), `${verb} in ${team}`).toBe(true);
        expect(await may(users.edit, verb, resource, other), `${verb} in ${other}`).toBe(false);
      }
    },
  );

  test("cannot create a CredentialsGrant", async () => {
    expect(await may(users.edit, "create", "credentialsgrants")).toBe(false);
  });
});

describe("the other namespace roles", () => {
  test("view reads the resources and their status, and writes nothing", async () => {
    expect(await may(users.view, "list", "computeendpoints", team)).toBe(true);
    expect(await may(users.view, "get", "branches/status", team)).toBe(true);
    await expect(as(users.view, ["-n", team, "apply", "-f", "-"], endpoint("viewer"))).rejects.toThrow(
      /forbidden/i,
    );
  });

  test("admin of a namespace may do what edit does there, and still cannot write a CredentialsGrant", async () => {
    await as(users.admin, ["-n", team, "apply", "-f", "-"], endpoint("admin-made"));
    expect(await may(users.admin, "patch", "computeendpoints/status", team)).toBe(false);
    // A RoleBinding never grants a cluster-scoped resource, even with a ClusterRole that names it.
    for (const verb of ["create", "update", "delete", "list"])
      expect(await may(users.admin, verb, "credentialsgrants"), verb).toBe(false);
  });

  test("only a cluster-wide admin (a ClusterRoleBinding) may write CredentialsGrants", async () => {
    for (const verb of ["create", "update", "delete", "list"])
      expect(await may(clusterAdmin, verb, "credentialsgrants"), verb).toBe(true);
  });
});
