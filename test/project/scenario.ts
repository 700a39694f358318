// What the Project scenarios share: the controllers a user of projects runs (Project, and the
// Branch and ComputeEndpoint that adopt its defaults), manifests, reading a resource until it is in
// the state a step waits for, and what the platform was sent since a moment.

import { type ProjectObject } from "../../src/controllers/project/index.ts";
import type { Controller, KubeObject } from "../../src/runtime/index.ts";
import type { Emulator } from "../../tools/emulator/index.ts";
import { together } from "../support/controllers.ts";
import { eventually } from "../support/kube.ts";
import {
  branchController,
  computeEndpointController,
  projectController,
} from "../../src/controllers/registry.ts";

export type { ProjectObject };

export const factory = together(
  (o) => projectController(o) as unknown as Controller<KubeObject>,
  (o) => branchController(o) as unknown as Controller<KubeObject>,
  (o) => computeEndpointController(o) as unknown as Controller<KubeObject>,
);

const manifest = (kind: string, name: string, spec: object, annotations?: Record<string, string>) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind,
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec,
});

export const project = (name: string, spec: object = {}, annotations?: Record<string, string>) =>
  manifest("Project", name, spec, annotations);
export const branch = (name: string, spec: object) => manifest("Branch", name, spec);
export const endpoint = (name: string, spec: object) => manifest("ComputeEndpoint", name, spec);

interface Conditioned extends KubeObject {
  status?: {
    conditions?: {
      type: string;
      status: string;
      reason: string;
      message: string;
      observedGeneration?: number;
    }[];
  };
}

export function condition(obj: Conditioned, type: string) {
  return obj.status?.conditions?.find((c) => c.type === type);
}

/**
 * The resource once its Ready condition, written for its current generation, has `status` (and
 * `reason`) and `check` holds.
 */
export function until<T extends Conditioned>(
  read: () => Promise<T>,
  status: "True" | "False",
  {
    reason,
    check = () => true,
    timeoutMs = 60_000,
  }: { reason?: string; check?: (o: T) => boolean; timeoutMs?: number } = {},
): Promise<T> {
  let last: T | undefined;
  return eventually(
    async () => {
      const obj = (last = await read());
      const ready = condition(obj, "Ready");
      const current = ready?.observedGeneration === obj.metadata.generation;
      return current &&
        ready?.status === status &&
        (reason === undefined || ready.reason === reason) &&
        check(obj)
        ? obj
        : undefined;
    },
    { what: `Ready=${status} ${reason ?? ""}`, timeoutMs, intervalMs: 200 },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; last seen ${JSON.stringify(last?.status?.conditions)}`, {
      cause: err,
    });
  });
}

/** What the platform is sent from now on: `since()` marks the moment, `sent(...)` reads it. */
export function requests(emulator: Emulator) {
  let mark = emulator.requestLog.total;
  return {
    since() {
      mark = emulator.requestLog.total;
    },
    /** Requests since the mark, as `METHOD route` (e.g. `PATCH /projects/:project_id`), optionally only these. */
    sent(filter: (route: string) => boolean = () => true): string[] {
      const count = emulator.requestLog.total - mark;
      const entries = count > 0 ? emulator.requestLog.latest(count) : [];
      return entries.map((e) => e.route).filter(filter);
    },
  };
}

/** A request that changes something on the platform (not a read). */
export const mutation = (route: string) => !route.startsWith("GET ");
