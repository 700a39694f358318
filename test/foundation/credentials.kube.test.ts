// The control plane authenticates users and ServiceAccounts and authorizes
// them with RBAC, so a test can act as the operator's ServiceAccount.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNamespace, kubectl, serviceAccountKubeconfig, userKubeconfig } from "../support/kube.ts";

let namespace: string;

beforeAll(async () => {
  namespace = await createNamespace("creds");
});

afterAll(async () => {
  await kubectl(["delete", "namespace", namespace, "--wait=false"]);
});

describe("credentials for other identities", () => {
  it("a minted user is denied until RBAC grants access", async () => {
    const kubeconfig = await userKubeconfig("alice", ["developers"]);
    await expect(kubectl(["get", "configmaps", "-n", namespace], { kubeconfig })).rejects.toThrow(
      /forbidden/i,
    );

    await kubectl(["create", "role", "cm-reader", "-n", namespace, "--verb=list", "--resource=configmaps"]);
    await kubectl([
      "create",
      "rolebinding",
      "alice-reads",
      "-n",
      namespace,
      "--role=cm-reader",
      "--user=alice",
    ]);
    await expect(kubectl(["get", "configmaps", "-n", namespace], { kubeconfig })).resolves.toBeDefined();
    // The grant is exactly what RBAC says: no more.
    await expect(kubectl(["get", "secrets", "-n", namespace], { kubeconfig })).rejects.toThrow(/forbidden/i);
  });

  it("a ServiceAccount token authenticates as system:serviceaccount:<namespace>:<name>", async () => {
    await kubectl(["create", "serviceaccount", "robot", "-n", namespace]);
    const kubeconfig = await serviceAccountKubeconfig(namespace, "robot");
    const review = JSON.parse(await kubectl(["auth", "whoami", "-o", "json"], { kubeconfig })) as {
      status: { userInfo: { username: string } };
    };
    expect(review.status.userInfo.username).toBe(`system:serviceaccount:${namespace}:robot`);
    await expect(kubectl(["get", "secrets", "-n", namespace], { kubeconfig })).rejects.toThrow(/forbidden/i);
  });
});
