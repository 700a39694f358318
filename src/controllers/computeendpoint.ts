// The ComputeEndpoint adapter: a platform compute endpoint kept as its resource declares, on the
// managed-resource layer (managed/). Observe waits out the last change's operations, then finds
// the endpoint through the project's shared snapshot; create and update send at most one change
// (computeendpoint-plan.ts decides which); delete removes it. Conditions, credentials, retries
// and the finalizer are the layer's.
import {
  ComputeEndpointSpec,
  computeEndpointKind,
  type ComputeEndpointStatus,
  type ResolvedComputeEndpointSpec,
} from "../api/computeendpoint.ts";
import { restartedAtAnnotation } from "../api/group.ts";
import {
  ConflictError,
  NotFoundError,
  type Endpoint,
  type EndpointMutation,
  type PlatformClient,
} from "../platform/index.ts";
import { objectKey, type Controller, type KubeObject } from "../runtime/index.ts";
import {
  configMapKind,
  connectionData,
  publishConnection,
  type ConfigMap,
} from "./computeendpoint-connection.ts";
import { branchRefIndex, branchRefKeys, branchRefWatch, withBranchRef } from "./computeendpoint-branchref.ts";
import { createSpec, creationName } from "./computeendpoint-desired.ts";
import { plan, type Plan } from "./computeendpoint-plan.ts";
import { firstLook, observeInterval, observeMaxAge } from "./computeendpoint-polling.ts";
import { observedFields, statusOperations } from "./computeendpoint-status.ts";
import { managedController } from "./managed/controller.ts";
import { Problem } from "./managed/failures.ts";
import { lastChange, mutationOptions } from "./managed/operations.ts";
import type {
  Change,
  Deletion,
  ExternalClient,
  ManagedKind,
  Observation,
  Pass,
  PresentObservation,
  Published,
} from "./managed/types.ts";
import { ConnectionSecrets } from "./computeendpoint-password.ts";
import { connectionSecretOwner } from "./computeendpoint-secret.ts";
import { resourceKind, type ControllerFactory, type KindControllerOptions } from "./options.ts";

export interface ComputeEndpointObject extends KubeObject {
  spec: ComputeEndpointSpec;
  status?: ComputeEndpointStatus;
}

export const computeEndpointResourceKind = resourceKind(computeEndpointKind);

export const computeEndpointFinalizer = "neoncloud.dev/computeendpoint";

type S = ComputeEndpointStatus;
type CePass = Pass<ResolvedComputeEndpointSpec, S>;

const kind: ManagedKind<ComputeEndpointSpec> = {
  resource: { ...computeEndpointResourceKind, apiVersion: computeEndpointKind.apiVersion },
  finalizer: computeEndpointFinalizer,
  spec: ComputeEndpointSpec,
  credentials: (spec) => spec.credentials,
  observeOnly: (spec) => spec.managementPolicy === "ObserveOnly",
  orphanOnDelete: (spec) => spec.deletionPolicy === "Orphan",
};

/** Index of the ComputeEndpoint cache: `project/branch` of each read-write resource (branch claims). */
const readWriteBranch = "readWriteBranch";

class ComputeEndpoints implements ExternalClient<ResolvedComputeEndpointSpec, S, Plan> {
  private readonly pollMs: number;
  private readonly resyncMs: number;
  private readonly secrets: ConnectionSecrets;

  constructor(options: KindControllerOptions) {
    this.pollMs = options.pollIntervalMs ?? 5_000;
    this.resyncMs = options.resyncPeriodMs ?? 600_000;
    this.secrets = new ConnectionSecrets();
  }

  async observe(pass: CePass): Promise<Observation<S, Plan>> {
    const { spec, status } = pass;
    // 1. The last change is still running on the platform: look again later. Once its operations
    // finish, the client's snapshot shows the endpoint in the state the change announced, so no
    // new list of the project is needed to see it.
    const last = await lastChange(pass, spec.projectId, status.endpointId);
    if (last.running) return last.observation;
    const operations = last.operations;

    // 2. Find it: the adopted id, the recorded id, or the name given on creation.
    const endpoint = await this.find(pass.client, pass.obj, spec);
    if (!endpoint) {
      if (spec.endpointId) {
        throw new Problem(
          "EndpointNotFound",
          `endpoint ${spec.endpointId} not found in project ${spec.projectId}`,
          { retryAfterMs: 60_000, stalled: true },
        );
      }
      return { state: "absent" };
    }
    const next =
      spec.managementPolicy === "ObserveOnly"
        ? undefined
        : plan(spec, endpoint, status, pass.obj.metadata.annotations?.[restartedAtAnnotation]);
    return {
      state: "present",
      upToDate: next === undefined,
      diff: next,
      status: {
        ...observedFields(endpoint),
        operations,
        ...(next === undefined && spec.managementPolicy !== "ObserveOnly"
          ? { suspended: spec.suspended }
          : {}),
      },
      ready: usable(endpoint)
        ? ["True", "Available", `endpoint ${endpoint.id} is ${endpoint.currentState}`]
        : ["False", "EndpointState", `endpoint ${endpoint.id} is ${endpoint.currentState}`],
      observeAfterMs: observeInterval(pass.obj),
    };
  }

  async create(pass: CePass): Promise<Change<S>> {
    const { spec, obj } = pass;
    if (pass.status.endpointId) {
      pass.events.warning(
        "EndpointGone",
        "Create",
        `endpoint ${pass.status.endpointId} was deleted outside; recreating it`,
      );
    }
    checkBranchClaim(pass);
    const name = creationName(obj.metadata.uid ?? "");
    let result: EndpointMutation;
    try {
      // With the resource as its ticket: in a busy project the create is handed back with the
      // time of its turn, instead of holding a worker asleep until then (one of four, and twenty
      // projects to serve).
      result = await pass.client.createEndpoint(
        spec.projectId,
        createSpec(spec, name),
        mutationOptions(pass),
      );
    } catch (err) {
      throw platformProblem(err, spec.branchId);
    }
    pass.events.normal(
      "Created",
      "Create",
      `created endpoint ${result.endpoint.id} on branch ${spec.branchId}`,
    );
    return {
      status: {
        ...observedFields(result.endpoint),
        creationName: name,
        operations: statusOperations(result.operations),
        suspended: spec.suspended,
        restartedAt: obj.metadata.annotations?.[restartedAtAnnotation],
      },
      reason: "Creating",
      message: `creating endpoint ${result.endpoint.id}`,
      inProgress: true,
      requeueAfterMs: firstLook(pass.client, result.operations, this.pollMs),
    };
  }

  async update(pass: CePass, observed: PresentObservation<S, Plan>): Promise<Change<S>> {
    const next = observed.diff;
    const endpointId = observed.status.endpointId;
    if (!next || !endpointId) throw new Error("update without a planned change");
    const { client, spec, events } = pass;
    const { projectId } = spec;
    const options = mutationOptions(pass);
    let result: EndpointMutation;
    let reason: string;
    let message: string;
    let applied: Partial<S> = {};
    switch (next.action) {
      case "start":
        result = await client.startEndpoint(projectId, endpointId, options);
        reason = "Starting";
        message = "starting the endpoint";
        if (next.why === "resume") applied = { suspended: false };
        events.normal(
          "Starting",
          "Start",
          next.why === "resume"
            ? "spec.suspended changed to false"
            : "the endpoint never started; starting it",
        );
        break;
      case "update": {
        if (next.restarts) {
          events.normal(
            "Restarting",
            "Update",
            "changing the compute size restarts the endpoint and drops its connections",
          );
        }
        try {
          result = await client.updateEndpoint(projectId, endpointId, next.patch, options);
        } catch (err) {
          throw platformProblem(err, spec.branchId);
        }
        reason = "Updating";
        message = next.moves
          ? `moving endpoint ${endpointId} to branch ${spec.branchId}`
          : `updating ${Object.keys(next.patch).join(", ")}`;
        events.normal(next.moves ? "Moving" : "Updating", "Update", message);
        break;
      }
      case "restart":
        result = await client.restartEndpoint(projectId, endpointId, options);
        reason = "Restarting";
        message = "restarting the endpoint";
        applied = { restartedAt: next.restartedAt };
        events.normal(
          "Restarting",
          "Restart",
          `restart requested (${restartedAtAnnotation}=${next.restartedAt})`,
        );
        break;
      case "suspend":
        result = await client.suspendEndpoint(projectId, endpointId, options);
        reason = "Suspending";
        message = "suspending the endpoint";
        applied = { suspended: true };
        events.normal("Suspending", "Suspend", "spec.suspended is true");
        break;
    }
    const started = result.operations.length > 0;
    return {
      status: {
        ...observedFields(result.endpoint),
        operations: statusOperations(result.operations),
        ...applied,
      },
      reason,
      message,
      inProgress: started,
      requeueAfterMs: started ? firstLook(client, result.operations, this.pollMs) : 0,
    };
  }

  async delete(pass: CePass): Promise<Deletion> {
    let endpoint: Endpoint | undefined;
    try {
      endpoint = await this.find(pass.client, pass.obj, pass.spec);
    } catch (err) {
      // A project that does not exist holds no endpoint of ours: nothing to wait for.
      if (err instanceof Problem && err.reason === "ProjectNotFound") return { gone: true };
      throw err;
    }
    if (!endpoint) {
      this.secrets.forget(pass.obj.metadata.uid ?? "");
      return { gone: true };
    }
    try {
      await pass.client.deleteEndpoint(pass.spec.projectId, endpoint.id, mutationOptions(pass));
      pass.events.normal("Deleted", "Delete", `deleted endpoint ${endpoint.id}`);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
    // Come back to see it gone from the project before the finalizer is released.
    return { gone: false, requeueAfterMs: Math.min(this.pollMs, 1_000) };
  }

  async publish(pass: CePass): Promise<Published | undefined> {
    const name = pass.spec.connectionConfigMapName;
    const status = pass.status;
    if (name && status.endpointId) {
      const existing = pass.cache<ConfigMap>(configMapKind).get(pass.obj.metadata.namespace, name);
      await publishConnection(
        pass.kube,
        pass.obj,
        name,
        connectionData(pass.spec.projectId, status),
        existing,
      );
    }
    return this.secrets.publish(pass);
  }

  /** The endpoint this resource stands for: adopted id, recorded id, or the name given on creation. */
  private async find(
    client: PlatformClient,
    obj: KubeObject & { status?: S },
    spec: ComputeEndpointSpec,
  ): Promise<Endpoint | undefined> {
    let endpoints: readonly Endpoint[];
    try {
      endpoints = await client.snapshot(spec.projectId, { maxAgeMs: observeMaxAge(obj, this.resyncMs) });
    } catch (err) {
      if (err instanceof NotFoundError) {
        throw new Problem("ProjectNotFound", `project ${spec.projectId} not found`, {
          retryAfterMs: 60_000,
          stalled: true,
        });
      }
      throw err;
    }
    const id = spec.endpointId ?? obj.status?.endpointId;
    const name = creationName(obj.metadata.uid ?? "");
    const match = (list: readonly Endpoint[]) =>
      id
        ? (list.find((e) => e.id === id) ?? list.find((e) => e.name === name))
        : list.find((e) => e.name === name);
    const found = match(endpoints);
    // The snapshot may be as old as the resync period: an endpoint the user named (to adopt or
    // observe) and made outside the operator may be newer. A miss is believed only after a fresh list.
    if (found || !spec.endpointId) return found;
    return match(await client.snapshot(spec.projectId, { maxAgeMs: 0 }));
  }
}

/** Two resources of this cluster must not both create the read-write endpoint of one branch. */
function checkBranchClaim(pass: CePass): void {
  const { spec, obj } = pass;
  if (spec.type !== "read_write") return;
  const mine = claimOrder(obj);
  const cache = pass.cache<ComputeEndpointObject>(computeEndpointResourceKind);
  const rival = cache
    .byIndex(readWriteBranch, `${spec.projectId}/${spec.branchId}`)
    .map((key) => cache.getByKey(key))
    .find(
      (other) =>
        other !== undefined &&
        other.metadata.uid !== obj.metadata.uid &&
        !other.metadata.deletionTimestamp &&
        claimOrder(other) < mine,
    );
  if (rival) {
    throw new Problem(
      "BranchHasReadWriteEndpoint",
      `ComputeEndpoint ${objectKey(rival)} already claims the read-write endpoint of branch ${spec.branchId}`,
      { retryAfterMs: 30_000 },
    );
  }
}

/** Older resources win a branch; the UID breaks ties so every replica agrees. */
function claimOrder(obj: KubeObject): string {
  return `${obj.metadata.creationTimestamp ?? ""}/${obj.metadata.uid ?? ""}`;
}

/** Serving, or suspended and ready to wake on the next connection. */
function usable(endpoint: Endpoint): boolean {
  return endpoint.currentState === "active" || endpoint.currentState === "idle";
}

/** Names what the platform refused in the resource's own terms. */
function platformProblem(err: unknown, branchId: string): unknown {
  if (err instanceof ConflictError) {
    return new Problem(
      "BranchHasReadWriteEndpoint",
      `branch ${branchId} already has an endpoint of this kind: ${err.message}`,
      { retryAfterMs: 60_000 },
    );
  }
  if (err instanceof NotFoundError) {
    return new Problem("BranchNotFound", `branch ${branchId} not found: ${err.message}`, {
      retryAfterMs: 60_000,
    });
  }
  return err;
}

/**
 * The ComputeEndpoint controller. `create` lets a Manager own it; by default it is a standalone
 * Controller (tests).
 */
export function computeEndpointController(
  options: KindControllerOptions,
  create?: ControllerFactory<ComputeEndpointObject>,
): Controller<ComputeEndpointObject> {
  return managedController<ComputeEndpointSpec, S, Plan>({
    kind,
    external: withBranchRef(new ComputeEndpoints(options)),
    options,
    create: create as ControllerFactory<KubeObject> | undefined,
    owns: [configMapKind],
    // Its connection Secret (a Secret watch exists already, for credentials): a change or a
    // deletion wakes the ComputeEndpoint, which writes it again.
    secretConcerns: connectionSecretOwner,
    watches: [branchRefWatch],
    indexes: {
      [readWriteBranch]: (obj) => {
        const { spec, status } = obj as ComputeEndpointObject;
        // A branchRef is indexed under the branch the endpoint is on once it has one.
        const branchId = spec?.branchId ?? status?.branchId;
        return spec?.type === "read_write" && branchId ? [`${spec.projectId}/${branchId}`] : [];
      },
      [branchRefIndex]: branchRefKeys,
    },
  }) as unknown as Controller<ComputeEndpointObject>;
}
