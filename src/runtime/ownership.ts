// Controller ownership of the objects an operator writes for a resource (its Secrets,
// ConfigMaps): the owner reference that lets the garbage collector remove them with the
// resource, and the test that an existing object of that name is really ours.
import type { KubeObject, OwnerReference } from "./kube.ts";

/**
 * The controller owner reference to `owner`. blockOwnerDeletion keeps a foreground deletion of the
 * owner waiting until the object is gone, so nothing outlives it.
 */
export function controllerReference(
  owner: KubeObject & { apiVersion: string; kind: string },
): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Whether `owner` (by uid: a namesake created later is another resource) controls `obj`. */
export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  return (obj.metadata.ownerReferences ?? []).some((r) => r.controller && r.uid === owner.metadata.uid);
}
