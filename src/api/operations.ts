// A platform operation as a resource's status shows it: the operations of its last change, which
// the managed layer waits for before it looks at the platform object again.
import { z } from "zod";

export const StatusOperation = z.object({
  id: z.string(),
  action: z.string().describe("What the platform does, for example start_compute or apply_config."),
  status: z.string().describe("scheduling, running, finished, failed (or another platform status)."),
  failuresCount: z.int().min(0),
  createdAt: z.string(),
  updatedAt: z.string(),
  retryAt: z
    .string()
    .optional()
    .describe("When the platform runs a failed operation again (failed is not final while it is set)."),
});
export type StatusOperation = z.infer<typeof StatusOperation>;
