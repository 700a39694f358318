// The installation id on the real API server, read and created with nothing but the rights
// deploy/ should grant for it: get and create of ConfigMaps in the operator's namespace.
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeClient } from "../../runtime/index.ts";
import { createNamespace, kubectl, serviceAccountKubeconfig } from "../../../test/support/kube.ts";
import {
  InstallationIdentityError,
  identityConfigMapName,
  installationId,
  installationIdPattern,
} from "./installation.ts";

const configMaps = { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" };
const namespaces: string[] = [];

/** A namespace and a client of a ServiceAccount that may only get and create ConfigMaps there. */
async function operatorNamespace(): Promise<{ namespace: string; client: KubeClient }> {
  const namespace = await createNamespace("identity");
  namespaces.push(namespace);
  await kubectl(["create", "serviceaccount", "operator", "-n", namespace]);
  await kubectl([
    "create",
    "role",
    "identity",
    "-n",
    namespace,
    "--verb=get,create",
    "--resource=configmaps",
  ]);
  await kubectl([
    "create",
    "rolebinding",
    "identity",
    "-n",
    namespace,
    "--role=identity",
    `--serviceaccount=${namespace}:operator`,
  ]);
  const kc = new KubeConfig();
  kc.loadFromFile(await serviceAccountKubeconfig(namespace, "operator"));
  return { namespace, client: new KubeClient(kc) };
}

async function stored(namespace: string): Promise<string | undefined> {
  const out = await kubectl(["get", "configmap", identityConfigMapName, "-n", namespace, "-o", "json"]);
  return (JSON.parse(out) as { data?: Record<string, string> }).data?.installationId;
}

let op: { namespace: string; client: KubeClient };

beforeAll(async () => {
  op = await operatorNamespace();
});

afterAll(async () => {
  for (const ns of namespaces)
    await kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
});

describe("the installation id", () => {
  it("is made at the first start, kept in the ConfigMap, and the same at every later start", async () => {
    const first = await installationId(op.client, op.namespace);
    expect(first).toMatch(installationIdPattern);
    expect(await stored(op.namespace)).toBe(first);
    expect(await installationId(op.client, op.namespace)).toBe(first);
  });

  it("is one id when replicas start at once", async () => {
    const { namespace, client } = await operatorNamespace();
    const ids = await Promise.all(Array.from({ length: 5 }, () => installationId(client, namespace)));
    expect(new Set(ids).size).toBe(1);
    expect(await stored(namespace)).toBe(ids[0]);
  });

  it("a replica that lost the race to create it (409) reads the winner's", async () => {
    const { namespace, client } = await operatorNamespace();
    const winner = await installationId(client, namespace);
    // A replica that looked before the winner created it: its create conflicts.
    let looked = false;
    const late = Object.create(client) as KubeClient;
    late.get = (kind, namespace, name) => {
      if (looked) return client.get(kind, namespace, name);
      looked = true;
      return Promise.resolve(undefined);
    };
    expect(await installationId(late, namespace, { random: () => "ffffffff" })).toBe(winner);
    expect(await stored(namespace)).toBe(winner);
  });

  it("--installation-id wins and leaves the ConfigMap alone", async () => {
    const kept = await stored(op.namespace);
    expect(await installationId(op.client, op.namespace, { override: "0a1b2c3d" })).toBe("0a1b2c3d");
    expect(await stored(op.namespace)).toBe(kept);
  });

  it("a ConfigMap without a valid id stops the start, rather than minting a new id", async () => {
    const { namespace, client } = await operatorNamespace();
    await kubectl([
      "create",
      "configmap",
      identityConfigMapName,
      "-n",
      namespace,
      "--from-literal=installationId=not-hex",
    ]);
    await expect(installationId(client, namespace)).rejects.toThrow(InstallationIdentityError);
    await expect(installationId(client, namespace)).rejects.toThrow(/restore the previous value/);
    expect(await stored(namespace)).toBe("not-hex");
  });

  it("nothing else is needed: no list, watch or update of ConfigMaps", async () => {
    await expect(op.client.list(configMaps, { namespace: op.namespace })).rejects.toMatchObject({
      statusCode: 403,
    });
  });
});
