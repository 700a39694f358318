// The project of a Branch or a ComputeEndpoint: a platform id (`projectId`), or a Project resource
// of the namespace (`projectRef`), whose project the reference step reads once the Project is
// Ready (and, for its default branch or endpoint, which of them the resource adopts).
import { z } from "zod";
import { immutable, objectName, platformId, type CelRule } from "./fields.ts";

/**
 * `projectId`: optional in the stored object (a projectRef may name the project instead). The
 * reference step fills it before any adapter reads the spec, so the spec's type has it: the one
 * place the type says more than a parse alone gives (a parse of a projectRef spec leaves it unset).
 */
export function projectIdField(what: string): z.ZodString {
  return platformId
    .describe(`The platform project of the ${what}. Immutable. Exactly one of projectId and projectRef.`)
    .meta(immutable("projectId"))
    .optional() as unknown as z.ZodString;
}

/** The switch of a projectRef that adopts one of the project's defaults. */
export function adoptDefault(what: string) {
  return z
    .boolean()
    .default(false)
    .describe(
      `Adopt the project's ${what} (made with the project) instead of creating one: no second one is made. Adopted, it is kept when this resource goes unless deletionPolicy says Delete.`,
    );
}

/** `projectRef`: a Project of the namespace, with the switches `adopt` adds. */
export function projectRefField<T extends z.ZodRawShape>(what: string, adopt: T) {
  return z
    .object({ name: objectName.describe("Name of a Project resource in this namespace."), ...adopt })
    .optional()
    .describe(
      `A Project resource in this namespace whose project the ${what} is in, once that Project is Ready (until then it waits: WaitingForReference). Immutable. Exactly one of projectId and projectRef.`,
    );
}

/** The rules of the pair, on the spec. */
export const projectRules: CelRule[] = [
  {
    rule: "has(self.projectId) != has(self.projectRef)",
    message: "set exactly one of projectId and projectRef",
  },
  {
    rule: "has(self.projectId) == has(oldSelf.projectId) && (!has(self.projectRef) || (has(oldSelf.projectRef) && self.projectRef == oldSelf.projectRef))",
    message: "projectId and projectRef are immutable",
    fieldPath: ".projectRef",
  },
];
