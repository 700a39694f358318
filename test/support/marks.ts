// The owner mark a resource writes on the platform objects it creates, as a test computes it: the
// installation id an operator in `namespace` keeps there (its identity ConfigMap, made by the
// harness or the operator process on start), the resource's kind, namespace and name.
import {
  identityConfigMapName,
  installationIdKey,
  ownerMark,
} from "../../src/controllers/managed/installation.ts";
import { kubectl } from "./kube.ts";

export async function ownerMarkIn(kind: string, namespace: string, name: string): Promise<string> {
  const configMap = JSON.parse(
    await kubectl(["get", "configmap", identityConfigMapName, "-n", namespace, "-o", "json"]),
  ) as { data?: Record<string, string> };
  return ownerMark(configMap.data?.[installationIdKey] ?? "", kind, namespace, name);
}
