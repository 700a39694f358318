// Several kinds' controllers run as one for the operator harness (a Branch and the
// ComputeEndpoints on it), the way the operator's Manager runs them side by side.
import type { KindControllerOptions } from "../../src/controllers/options.ts";
import type { Controller, KubeObject } from "../../src/runtime/index.ts";

type Factory = (options: KindControllerOptions) => Controller<KubeObject>;

/** A factory whose controller starts, syncs and stops every controller of `factories`. */
export function together(...factories: Factory[]): Factory {
  return (options) => {
    const controllers = factories.map((f) => f(options));
    const all = {
      startCaches: () => controllers.forEach((c) => c.startCaches()),
      waitForSync: async () => {
        await Promise.all(controllers.map((c) => c.waitForSync()));
      },
      startWorkers: () => controllers.forEach((c) => c.startWorkers()),
      stop: async (deadlineMs = 0) => {
        await Promise.all(controllers.map((c) => c.stop(deadlineMs)));
      },
    };
    return all as unknown as Controller<KubeObject>;
  };
}
