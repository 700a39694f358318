// The namespaced user of the security scenarios holds exactly a team member's
// rights: the operator's kinds in its own namespace, nothing elsewhere, no Secrets.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { computeEndpointResourceKind } from "../../src/controllers/computeendpoint/index.ts";
import { createNamespace, kubectl } from "./kube.ts";
import { namespacedUser, type NamespacedUser } from "./namespaced-user.ts";

let dev: NamespacedUser;
let other: string;

const endpoint = (name: string, namespace?: string) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "ComputeEndpoint",
  metadata: { name, ...(namespace ? { namespace } : {}) },
  spec: { projectId: "proj-alpha", branchId: "br-dev" },
});

beforeAll(async () => {
  dev = await namespacedUser("team-b");
  other = await createNamespace("team-a");
  await kubectl(["create", "secret", "generic", "app-tls", "-n", dev.namespace, "--from-literal=x=y"]);
});

afterAll(async () => {
  for (const ns of [dev?.namespace, other]) {
    if (ns) await kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
  }
});

describe("a user with a namespaced role", () => {
  it("is who it says, not an administrator", async () => {
    const review = JSON.parse(await dev.kubectl(["auth", "whoami", "-o", "json"])) as {
      status: { userInfo: { username: string; groups?: string[] } };
    };
    expect(review.status.userInfo.username).toBe(dev.user);
    expect(review.status.userInfo.groups ?? []).not.toContain("system:masters");
  });

  it("creates, reads and deletes ComputeEndpoints in its namespace, by kubectl and by the client", async () => {
    await dev.apply(endpoint("web"));
    expect(await dev.kubectl(["get", "computeendpoint", "web", "-o", "name"])).toContain("web");
    const created = await dev.kube.create(computeEndpointResourceKind, endpoint("api", dev.namespace));
    expect(created.metadata.namespace).toBe(dev.namespace);
    await dev.kubectl(["delete", "computeendpoint", "web", "api", "--wait=false"]);
  });

  it("cannot create one in another namespace", async () => {
    await expect(
      dev.kubectl(["apply", "-n", other, "-f", "-"], JSON.stringify(endpoint("web"))),
    ).rejects.toThrow(/forbidden/i);
    await expect(dev.kube.create(computeEndpointResourceKind, endpoint("web", other))).rejects.toMatchObject({
      statusCode: 403,
    });
  });

  it("cannot read Secrets, not even in its namespace", async () => {
    await expect(dev.kubectl(["get", "secret", "app-tls"])).rejects.toThrow(/forbidden/i);
    await expect(dev.kubectl(["get", "secrets"])).rejects.toThrow(/forbidden/i);
  });

  it("cannot read or write CredentialsGrants (cluster-scoped)", async () => {
    await expect(dev.kubectl(["get", "credentialsgrants"])).rejects.toThrow(/forbidden/i);
    const grant = {
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "CredentialsGrant",
      metadata: { name: `${dev.namespace}-self` },
      spec: { namespaces: [dev.namespace], projects: ["*"], mintApiKeys: true },
    };
    await expect(dev.kubectl(["apply", "-f", "-"], JSON.stringify(grant))).rejects.toThrow(/forbidden/i);
  });
});
