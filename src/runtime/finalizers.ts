// Adds and removes our finalizer with a JSON patch that first tests the list
// it edits (as kube-rs does), so a concurrent change to the finalizers, ours or
// someone else's, makes the patch fail instead of silently dropping an entry.
import { ContentType, type KubeClient, type KubeObject, type ResourceKind } from "./kube.ts";

export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata.finalizers?.includes(finalizer) ?? false;
}

export function addFinalizer<T extends KubeObject>(
  client: KubeClient,
  kind: ResourceKind,
  obj: T,
  finalizer: string,
): Promise<T> {
  const current = obj.metadata.finalizers ?? [];
  const patch =
    current.length === 0
      ? [
          { op: "test", path: "/metadata/finalizers", value: null },
          { op: "add", path: "/metadata/finalizers", value: [finalizer] },
        ]
      : [
          { op: "test", path: "/metadata/finalizers", value: current },
          { op: "add", path: "/metadata/finalizers/-", value: finalizer },
        ];
  return client.patch<T>(kind, obj.metadata.namespace, obj.metadata.name ?? "", patch, ContentType.JsonPatch);
}

export function removeFinalizer<T extends KubeObject>(
  client: KubeClient,
  kind: ResourceKind,
  obj: T,
  finalizer: string,
): Promise<T> | undefined {
  const index = obj.metadata.finalizers?.indexOf(finalizer) ?? -1;
  if (index < 0) return undefined;
  const patch = [
    { op: "test", path: `/metadata/finalizers/${index}`, value: finalizer },
    { op: "remove", path: `/metadata/finalizers/${index}` },
  ];
  return client.patch<T>(kind, obj.metadata.namespace, obj.metadata.name ?? "", patch, ContentType.JsonPatch);
}
