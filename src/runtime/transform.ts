// What an informer keeps of each object. A cache holds every object of its kind
// for the life of the process, so a field no reader uses costs memory once per
// object: `metadata.managedFields` (server-side apply's bookkeeping) is about
// half of a typical ComputeEndpoint. controller-runtime drops it the same way
// (its cache's default transform).
import type { KubeObject } from "./kube.ts";

/** Applied to every listed or watched object before it is cached and handed to handlers. */
export type CacheTransform = (obj: KubeObject) => KubeObject;

/**
 * The object without `metadata.managedFields`. Writes stay safe: the API server
 * keeps an object's managedFields when a PUT or patch leaves them out.
 * Copies rather than `delete`s, which would leave V8 a slower, larger
 * dictionary-mode object.
 */
export function stripManagedFields(obj: KubeObject): KubeObject {
  const metadata = obj.metadata as KubeObject["metadata"] & { managedFields?: unknown };
  if (metadata?.managedFields === undefined) return obj;
  const { managedFields: _dropped, ...rest } = metadata;
  return { ...obj, metadata: rest };
}

/**
 * The annotation client-side `kubectl apply` writes: a copy of the object as applied. On a Secret
 * it holds the Secret's data (its stringData in clear), so a metadata-only reader drops it.
 */
export const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration";

/**
 * Metadata only: for a kind whose objects the reader needs to find and to tell apart by
 * resourceVersion, but whose content it reads by name when it needs it. A namespace's Secrets
 * (Helm releases, certificates, other tools' keys) can weigh hundreds of megabytes; their names,
 * labels and owners weigh little. managedFields and the last-applied annotation go too: both are
 * copies of the content, not metadata.
 */
export function metadataOnly(obj: KubeObject): KubeObject {
  const { metadata } = stripManagedFields(obj);
  const annotations = metadata.annotations;
  if (annotations?.[lastAppliedAnnotation] === undefined) {
    return { apiVersion: obj.apiVersion, kind: obj.kind, metadata };
  }
  const { [lastAppliedAnnotation]: _dropped, ...rest } = annotations;
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { ...metadata, annotations: rest } };
}
