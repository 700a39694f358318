// The API group and version of every custom resource of this operator.
export const group = "neoncloud.dev";
export const version = "v1alpha1";
export const apiVersion = `${group}/${version}`;

/** Annotation whose new value asks for a restart of the endpoint. */
export const restartedAtAnnotation = `${group}/restartedAt`;
/** Annotation whose new value asks for a new password of the connection Secret's role (a reset). */
export const rotatePasswordAtAnnotation = `${group}/rotatePasswordAt`;
/**
 * Annotation whose new value asks for a Branch to be reset from its parent (the platform's
 * restore with the parent as source), named like restartedAt: a timestamp of the request.
 */
export const restoredFromParentAtAnnotation = `${group}/restoredFromParentAt`;
/** Annotation that overrides the periodic drift-observation interval of one resource (a duration). */
export const observeIntervalAnnotation = `${group}/observeInterval`;
/** The field manager of every object the operator writes with server-side apply. */
export const fieldManager = "neon-cloud-operator";
