// The standard Kubernetes condition shape (metav1.Condition), shared by every kind.
import { z } from "zod";

export const Condition = z.object({
  type: z.string().describe("Type of condition, for example Ready or Synced."),
  status: z.enum(["True", "False", "Unknown"]),
  reason: z.string().describe("A CamelCase word saying why the condition has its status."),
  message: z.string().describe("What happened, for a person."),
  observedGeneration: z
    .int()
    .min(0)
    .optional()
    .describe("The .metadata.generation the condition was set for."),
  lastTransitionTime: z.string().describe("When the condition last changed status (RFC 3339)."),
});
export type Condition = z.infer<typeof Condition>;

export const Conditions = z
  .array(Condition)
  .meta({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] })
  .describe("Latest observations of the resource's state; Ready is True when it is as declared.");
