// The ComputeEndpoint's four verbs. `observe` finds the endpoint through the project's shared
// snapshot, names the one change its plan says (plan.ts) or, once it is as declared, what its
// connection Secret needs (connection/secrets.ts) and its ConfigMap; `create` gives it the name that
// finds it again after a lost answer; `update` sends the one change; `delete` deletes it. Waiting
// for operations, not-found, the policies, status and conditions are the managed layer's.
import type { ComputeEndpointSpec, ComputeEndpointStatus } from "../../api/computeendpoint.ts";
import { restartedAtAnnotation } from "../../api/group.ts";
import {
  ConflictError,
  NotFoundError,
  UnprocessableError,
  maxConnectionsFor,
  pooledHost,
  type Endpoint,
  type EndpointMutation,
  type PlatformClient,
} from "../../platform/index.ts";
import type { KubeObject } from "../../runtime/index.ts";
import type { BranchResets } from "../connection/branch-resets.ts";
import { branchResetOf, type PostgresConnection } from "../connection/secret-data.ts";
import {
  ConnectionSecrets,
  resetStep,
  type ConnectionAddress,
  type ResetReason,
} from "../connection/secrets.ts";
import { carriedMark } from "../managed/carried.ts";
import { ownerAnnotation } from "../managed/installation.ts";
import type { Adapter, Answer, Observation, Pass, Verdict } from "../managed/kind.ts";
import { Refusal, outside } from "../managed/refusal.ts";
import { observeMaxAge } from "../operations/looks.ts";
import { inProject, mutation } from "../operations/project.ts";
import { createSpec, legacyName } from "./desired.ts";
import { plan, type Plan } from "./plan.ts";

/** The spec as the verbs see it: references resolved, with what its branch's Branch lends it. */
export type Spec = ComputeEndpointSpec & {
  /** The branch's resets, from the Branch managing it (connection/branch-resets.ts). */
  branchResets?: BranchResets | undefined;
  /** Its Branch's create made its endpoint for this very resource (carried.ts). */
  madeWithBranch?: boolean | undefined;
};
type S = ComputeEndpointStatus;
type CePass = Pass<Spec, S, PlatformClient>;

/** A change of the endpoint, or its connection Secret's password reset. */
export type EndpointStep = Plan | (typeof resetStep & { change: "resetPassword"; why: ResetReason });

/** An endpoint as found; `branchMark`: the owner mark its branch carries for it (one made with it). */
export type ObservedEndpoint = Endpoint & { branchMark?: string | undefined };

export interface ComputeEndpointObject extends KubeObject {
  spec: ComputeEndpointSpec;
  status?: ComputeEndpointStatus;
}

export class ComputeEndpoints implements Adapter<Spec, S, ObservedEndpoint, EndpointStep, PlatformClient> {
  private readonly resyncMs: number;
  private readonly secrets = new ConnectionSecrets();

  constructor(resyncMs: number) {
    this.resyncMs = resyncMs;
  }

  async observe(pass: CePass): Promise<Observation<ObservedEndpoint, S, EndpointStep>> {
    const { spec } = pass;
    const endpoint = await inProject(pass, spec.projectId ?? "", () => this.find(pass));
    if (!endpoint) return { exists: false };
    const observeOnly = spec.managementPolicy === "ObserveOnly";
    const found = {
      exists: true as const,
      object: endpoint,
      id: endpoint.id,
      status: status(endpoint),
      ready: ready(endpoint),
      marks: { [ownerAnnotation]: endpoint.name ?? endpoint.branchMark ?? "" },
    };
    if (pass.deleting) {
      this.secrets.forget(pass.obj.metadata.uid ?? "");
      return found;
    }
    const next = plan(spec, endpoint, pass.status, pass.obj.metadata.annotations?.[restartedAtAnnotation]);
    if (next && !observeOnly) return { ...found, next };
    // As declared: the run state the spec asks for is the one applied; then its connection details.
    const settled: Partial<S> = observeOnly ? {} : { suspended: spec.suspended };
    const target = spec.connectionSecret ? this.target(spec, endpoint) : undefined;
    const view = target ? await this.secrets.observe(pass, target, observeOnly) : undefined;
    if (view && "reset" in view)
      return { ...found, next: { ...resetStep, change: "resetPassword", why: view.reset } };
    return {
      ...found,
      status: { ...found.status, ...settled, ...view?.status },
      connection: {
        secret: view?.secret,
        configMap: spec.connectionConfigMapName
          ? { name: spec.connectionConfigMapName, data: configMapData(spec, endpoint, view?.address) }
          : undefined,
      },
      lookAgainMs: view?.lookAgainMs,
    };
  }

  async create(pass: CePass): Promise<Answer<S>> {
    const { spec, obj } = pass;
    const branchId = spec.branchId ?? "";
    const name = pass.mark;
    try {
      const result = await pass.client.createEndpoint(
        spec.projectId ?? "",
        createSpec({ ...spec, branchId }, name),
        mutation(pass),
      );
      return {
        ...answered(result),
        status: {
          ...status(result.endpoint),
          creationName: name,
          suspended: spec.suspended,
          restartedAt: obj.metadata.annotations?.[restartedAtAnnotation],
        },
        message: `created endpoint ${result.endpoint.id} on branch ${branchId}`,
      };
    } catch (err) {
      throw refused(err, pass, "create");
    }
  }

  async update(pass: CePass, step: EndpointStep, endpoint: ObservedEndpoint): Promise<Answer<S>> {
    const { client, spec } = pass;
    const projectId = spec.projectId ?? "";
    const options = mutation(pass);
    try {
      switch (step.change) {
        case "start": {
          const result = await client.startEndpoint(projectId, endpoint.id, options);
          return answered(result, step.why === "resume" ? { suspended: false } : {});
        }
        case "update":
          return answered(await client.updateEndpoint(projectId, endpoint.id, step.patch, options));
        case "restart":
          return answered(await client.restartEndpoint(projectId, endpoint.id, options), {
            restartedAt: step.restartedAt,
          });
        case "suspend":
          return answered(await client.suspendEndpoint(projectId, endpoint.id, options), { suspended: true });
        case "resetPassword":
          return await this.secrets.reset(pass, this.target(spec, endpoint), step.why);
      }
    } catch (err) {
      throw refused(err, pass, step.change);
    }
  }

  async delete(pass: CePass, endpoint: ObservedEndpoint): Promise<Answer<S> | "gone"> {
    const projectId = pass.spec.projectId ?? "";
    try {
      const result = await pass.client.deleteEndpoint(projectId, endpoint.id, mutation(pass));
      return result ? { ...answered(result), message: `deleted endpoint ${endpoint.id}` } : "gone";
    } catch (err) {
      if (err instanceof NotFoundError) return "gone";
      if (err instanceof UnprocessableError && (await keptWithBranch(pass, projectId, endpoint))) {
        // The platform's rule, not a failure: the endpoint is part of its branch now, and goes
        // with it; the Branch hands it to the next ComputeEndpoint naming it.
        pass.events.normal(
          "EndpointKeptWithBranch",
          "Delete",
          `endpoint ${endpoint.id} stays with branch ${endpoint.branchId}: the platform deletes the read-write endpoint of a masked branch only with the branch`,
        );
        return "gone";
      }
      throw err;
    }
  }

  /**
   * The endpoint this resource stands for: adopted id, recorded id, or its owner mark, the name it
   * gave the endpoint on creation (which finds it after a lost create answer, a lost status, or a
   * restore that recreated the resource).
   */
  private async find(pass: CePass): Promise<ObservedEndpoint | undefined> {
    const { spec, obj, client } = pass;
    const projectId = spec.projectId ?? "";
    const id = spec.endpointId ?? pass.status.endpointId;
    const names = [pass.mark, legacyName(obj.metadata.uid ?? "")];
    // Made with its Branch's create for this very resource (carried.ts): the branch's read-write one.
    const handed = (e: Endpoint) =>
      !id && spec.madeWithBranch === true && e.branchId === spec.branchId && e.type === "read_write";
    const match = (list: readonly Endpoint[]) =>
      (id ? list.find((e) => e.id === id) : undefined) ??
      list.find((e) => names.includes(e.name ?? "") || handed(e));
    const found = match(await client.snapshot(projectId, { maxAgeMs: observeMaxAge(obj, this.resyncMs) }));
    // The snapshot may be as old as the resync period: an endpoint the user named (to adopt or
    // observe) and made outside the operator may be newer, and so may one recorded in status by
    // another process (a shard this resource moved from, docs/scale.md). A miss of a known endpoint
    // is believed only after a fresh list, never answered with a second create.
    if (found || !(id ?? spec.madeWithBranch)) return this.withBranchMark(pass, found);
    return this.withBranchMark(pass, match(await client.snapshot(projectId, { maxAgeMs: 0 })));
  }

  /**
   * An endpoint to adopt without a name may have been made with its branch's create, whose owner
   * mark is then on the branch (carried.ts): read before adopting, so another installation's is
   * refused like one marked in its name (docs/security.md).
   */
  private async withBranchMark(pass: CePass, e: Endpoint | undefined): Promise<ObservedEndpoint | undefined> {
    const adopting = pass.spec.endpointId !== undefined && pass.status.endpointId === undefined;
    if (!adopting || !e || e.name !== undefined || e.type !== "read_write") return e;
    const branch = (await pass.client.branchSnapshot(pass.spec.projectId ?? "")).find(
      (b) => b.id === e.branchId,
    );
    return { ...e, branchMark: branch?.annotations?.[carriedMark({ noun: "endpoint" })] };
  }

  /** The connection Secret the spec asks for, on the endpoint as found. */
  private target(spec: Spec, endpoint: Endpoint): PostgresConnection {
    const want = spec.connectionSecret;
    return {
      name: want?.name ?? "",
      field: "spec.connectionSecret.name",
      projectId: spec.projectId ?? "",
      branchId: endpoint.branchId,
      endpointId: endpoint.id,
      host: endpoint.host,
      pooledHost: pooledHost(endpoint),
      role: want?.role ?? "",
      database: want?.database ?? "",
      allowPasswordReset: want?.allowPasswordReset ?? false,
      ...branchResetOf(spec.branchResets),
    };
  }
}

/** The read-write endpoint of a masked (anonymized) branch, which the platform deletes only with it. */
async function keptWithBranch(pass: CePass, projectId: string, endpoint: ObservedEndpoint): Promise<boolean> {
  if (endpoint.type !== "read_write") return false;
  const branches = await pass.client.branchSnapshot(projectId, { maxAgeMs: 0 });
  const branch = branches.find((b) => b.id === endpoint.branchId);
  return branch?.restrictedActions?.some((a) => a.name === "delete-rw-endpoint") === true;
}

/** The endpoint's fields in status. */
function status(endpoint: Endpoint): Partial<S> {
  return {
    endpointId: endpoint.id,
    host: endpoint.host,
    pooledHost: pooledHost(endpoint),
    proxyHost: endpoint.proxyHost,
    regionId: endpoint.regionId,
    branchId: endpoint.branchId,
    currentState: endpoint.currentState,
    // Present only on create and update answers: absent means nothing is pending.
    pendingState: endpoint.pendingState,
    lastActive: endpoint.lastActive,
    computeUnits: { min: endpoint.autoscalingLimitMinCu, max: endpoint.autoscalingLimitMaxCu },
    maxConnections: maxConnectionsFor(endpoint.autoscalingLimitMinCu),
  };
}

/** Serving, or suspended and ready to wake on the next connection. */
function ready(endpoint: Endpoint): Verdict {
  return endpoint.currentState === "active" || endpoint.currentState === "idle"
    ? ["True", "Available", `endpoint ${endpoint.id} is ${endpoint.currentState}`]
    : ["False", "EndpointState", `endpoint ${endpoint.id} is ${endpoint.currentState}`];
}

/**
 * The ConfigMap: the platform's convention (port 5432, TLS required) unless a connection Secret
 * says otherwise: then the address the platform's connection answer gave it, so both agree.
 */
function configMapData(spec: Spec, endpoint: Endpoint, address: ConnectionAddress | undefined) {
  return {
    host: address?.host ?? endpoint.host,
    pooledHost: address?.pooledHost ?? pooledHost(endpoint),
    port: String(address?.port ?? 5432),
    endpointId: endpoint.id,
    projectId: spec.projectId ?? "",
    branchId: endpoint.branchId,
    regionId: endpoint.regionId,
    sslmode: address?.sslmode ?? "require",
  };
}

/** The endpoint and operations a mutation answered. */
function answered(result: EndpointMutation, more: Partial<S> = {}): Answer<S> {
  return { status: { ...status(result.endpoint), ...more }, operations: result.operations };
}

/** What the platform refused, in the resource's own terms (anything else as it is). */
function refused(err: unknown, pass: CePass, change: EndpointStep["change"] | "create"): unknown {
  const branchId = pass.spec.branchId ?? "";
  if (err instanceof ConflictError) {
    const [reason, why] =
      pass.spec.type === "read_write"
        ? ["BranchHasReadWriteEndpoint", `branch ${branchId} already has a read-write endpoint`]
        : change === "create"
          ? ["CreateRefused", `the platform refused a read-only endpoint on branch ${branchId}`]
          : [
              "MoveRefused",
              `the platform moves an endpoint only to a branch with none; branch ${branchId} has one`,
            ];
    return new Refusal(reason, "outside", `${why}: ${err.message}`, { cause: err });
  }
  if (err instanceof NotFoundError && change !== "resetPassword") {
    return outside(
      "BranchNotFound",
      `branch ${branchId} (spec.branchId) not found in project ${pass.spec.projectId ?? ""}: make it, or name a branch that exists`,
    );
  }
  return err;
}
