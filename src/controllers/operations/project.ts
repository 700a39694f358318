// A resource in its project: its turn in the project's mutation gate, and what a project that does
// not exist means for it.
import { NotFoundError, type MutationOptions } from "../../platform/index.ts";
import { objectKey, type KubeObject } from "../../runtime/index.ts";
import { outside } from "../managed/refusal.ts";

/** A mutation's options: the pass's signal, and the resource as its ticket in the project's gate. */
export function mutation(pass: { signal: AbortSignal; obj: KubeObject; wake(): void }): MutationOptions {
  // The resource is its ticket: turns are taken in the order asked, and a change handed back with
  // the time of its turn does not hold a worker asleep until then; if its turn comes sooner than
  // it was told, it is reconciled again then.
  return { signal: pass.signal, ticket: objectKey(pass.obj), wake: () => pass.wake() };
}

/**
 * Looks for an object in a project: a 404 on the project's lists means the project does not exist
 * (it rarely appears by itself: ProjectNotFound, Stalled), and for a resource being deleted that
 * there is nothing left to remove.
 */
export async function inProject<T>(
  pass: { deleting: boolean },
  projectId: string,
  find: () => Promise<T | undefined>,
): Promise<T | undefined> {
  try {
    return await find();
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
    if (pass.deleting) return undefined;
    throw outside("ProjectNotFound", `project ${projectId} not found`);
  }
}
