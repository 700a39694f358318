// Field schemas shared by several kinds. Each carries its validation once:
// zod checks it in the operator, and the same rule becomes OpenAPI/CEL in the CRD.
import { z } from "zod";

/** A CEL rule for the CRD's `x-kubernetes-validations`. */
export interface CelRule {
  rule: string;
  message: string;
  /** A field path for the error, relative to the schema the rule sits on. */
  fieldPath?: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
}

export function cel(...rules: CelRule[]): { "x-kubernetes-validations": CelRule[] } {
  return { "x-kubernetes-validations": rules };
}

/** A field that may be set once and never changed. */
export function immutable(field: string): { "x-kubernetes-validations": CelRule[] } {
  return cel({ rule: "self == oldSelf", message: `${field} is immutable` });
}

/** Platform identifiers (projects, branches, endpoints): `^[a-z0-9-]{1,60}$` as the platform defines them. */
export const platformId = z.string().regex(/^[a-z0-9-]{1,60}$/);

/** A Kubernetes object name (DNS-1123 subdomain). */
export const objectName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);

/** Go-style durations as Kubernetes uses them: "90s", "5m", "1h30m". */
export const durationPattern = /^([0-9]+(ms|s|m|h))+$/;
const durationSource = "^([0-9]+(ms|s|m|h))+$";

/** A duration between `min` and `max` (both Go-style), checked at admission with CEL. */
export function boundedDuration(field: string, min: string, max?: string) {
  const guard = `self.matches('${durationSource}')`;
  const rules: CelRule[] = [
    {
      rule: `!${guard} || duration(self) >= duration('${min}')`,
      message: `${field} must be at least ${min}`,
    },
  ];
  if (max) {
    rules.push({
      rule: `!${guard} || duration(self) <= duration('${max}')`,
      message: `${field} must be at most ${max}`,
    });
  }
  // A bound on the length keeps the rules' estimated cost within the API server's budget where the
  // field sits in a list (a backup schedule's retention).
  return z
    .string()
    .max(32)
    .regex(durationPattern)
    .meta(cel(...rules));
}

/** Where an API key is read from: a key of a Secret in the resource's own namespace. */
export const SecretKeyRef = z
  .object({
    secretName: objectName.describe("Name of a Secret in the same namespace as this resource."),
    key: z
      .string()
      .min(1)
      .default("apiKey")
      .describe("Key within the Secret that holds the platform API key."),
  })
  .describe(
    "Credentials for the platform API: a Secret in this resource's namespace holding an API key and labelled neoncloud.dev/secret-type=api-key (no other Secret is read). Default: the operator's own credentials, where a CredentialsGrant allows them.",
  );
export type SecretKeyRef = z.infer<typeof SecretKeyRef>;

/** How a resource of another namespace may use a platform object this resource holds. */
export const Use = z.enum(["Observe", "Attach", "Derive"]);
export type Use = z.infer<typeof Use>;

/**
 * The holder's consent: which other namespaces may use the platform object this resource holds,
 * and how. Without an entry, a resource of another namespace is refused (nothing is sent).
 */
export function sharedWithField(what: string) {
  return z
    .array(
      z.object({
        namespace: z
          .string()
          .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
          .max(63)
          .describe("A namespace whose resources may use it."),
        uses: z
          .array(Use)
          .min(1)
          .optional()
          .describe(
            "What they may do: Observe (an observe-only resource reads it and its connection details), Attach (an endpoint on it), Derive (a branch, snapshot or restore made from its data). Omitted: all of them.",
          ),
      }),
    )
    .max(50)
    .optional()
    .describe(
      `Namespaces this resource shares its ${what} with. A ${what} a resource holds is its namespace's: a resource of another namespace may observe it, attach to it or copy its data only where this list says so (the holder's consent; withdrawing it stops the use). Omitted: no other namespace.`,
    );
}
