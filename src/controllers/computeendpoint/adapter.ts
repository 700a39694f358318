// The ComputeEndpoint adapter: the platform verbs of a compute endpoint and its plan (plan.ts).
// It finds the endpoint through the project's shared snapshot, creates it with the name that
// finds it again after a lost answer, sends the one change plan names, and deletes it; what the
// endpoint publishes is its ConfigMap of hosts and ids and its connection Secret. Waiting for
// operations, not-found, the policies, status and conditions are the managed layer's.
import type { ComputeEndpointSpec, ComputeEndpointStatus } from "../../api/computeendpoint.ts";
import { restartedAtAnnotation } from "../../api/group.ts";
import {
  ConflictError,
  NotFoundError,
  maxConnectionsFor,
  pooledHost,
  type Endpoint,
  type EndpointMutation,
} from "../../platform/index.ts";
import { objectKey, type KubeObject } from "../../runtime/index.ts";
import { branchResets } from "../branch/resets.ts";
import { branchResourceKind, type BranchObject } from "../branch/index.ts";
import { childOwnerAnnotation } from "../managed/children.ts";
import { Delay, Problem, notFound } from "../managed/errors.ts";
import { observeInterval, observeMaxAge } from "../managed/polling.ts";
import type { Adapter, Answer, ConnectionDetails, Pass, Verdict } from "../managed/types.ts";
import { createSpec, legacyName } from "./desired.ts";
import { plan, type Plan } from "./plan.ts";

type S = ComputeEndpointStatus;
type CePass = Pass<ComputeEndpointSpec, S>;
/** An endpoint as found; `branchMark`: the owner mark its branch carries for it (one made with it). */
export type ObservedEndpoint = Endpoint & { branchMark?: string };

export interface ComputeEndpointObject extends KubeObject {
  spec: ComputeEndpointSpec;
  status?: ComputeEndpointStatus;
}

export class ComputeEndpoints implements Adapter<ComputeEndpointSpec, S, ObservedEndpoint, Plan> {
  private readonly resyncMs: number;

  constructor(resyncMs: number) {
    this.resyncMs = resyncMs;
  }

  /**
   * The endpoint this resource stands for: adopted id, recorded id, or its owner mark, the name it
   * gave the endpoint on creation (which finds it after a lost create answer, a lost status, or a
   * restore that recreated the resource).
   */
  async find(pass: CePass): Promise<ObservedEndpoint | undefined> {
    const { spec, obj, client } = pass;
    const id = spec.endpointId ?? pass.status.endpointId;
    const names = [pass.mark, legacyName(obj.metadata.uid ?? "")];
    // Made with its Branch's create for this very resource (children.ts): the branch's read-write one.
    const handed = (e: Endpoint) =>
      !id && pass.handedOver && e.branchId === spec.branchId && e.type === "read_write";
    const match = (list: readonly Endpoint[]) =>
      (id ? list.find((e) => e.id === id) : undefined) ??
      list.find((e) => names.includes(e.name ?? "") || handed(e));
    const found = match(
      await client.snapshot(spec.projectId, { maxAgeMs: observeMaxAge(obj, this.resyncMs) }),
    );
    // The snapshot may be as old as the resync period: an endpoint the user named (to adopt or
    // observe) and made outside the operator may be newer. A miss is believed only after a fresh list.
    if (found || !(spec.endpointId ?? pass.handedOver)) return this.withBranchMark(pass, found);
    return this.withBranchMark(pass, match(await client.snapshot(spec.projectId, { maxAgeMs: 0 })));
  }

  /**
   * An endpoint to adopt without a name may have been made with its branch's create, whose owner
   * mark is then on the branch (managed/children.ts): read before adopting, so another
   * installation's is refused like one marked in its name (docs/security.md).
   */
  private async withBranchMark(pass: CePass, e: Endpoint | undefined): Promise<ObservedEndpoint | undefined> {
    const adopting = pass.spec.endpointId !== undefined && pass.status.endpointId === undefined;
    if (!adopting || !e || e.name !== undefined || e.type !== "read_write") return e;
    const branch = (await pass.client.branchSnapshot(pass.spec.projectId)).find((b) => b.id === e.branchId);
    return { ...e, branchMark: branch?.annotations?.[childOwnerAnnotation({ noun: "endpoint" })] };
  }

  readonly id = (endpoint: Endpoint) => endpoint.id;
  readonly markOf = (endpoint: ObservedEndpoint) => endpoint.name ?? endpoint.branchMark;

  plan(pass: CePass, endpoint: Endpoint): Plan | undefined {
    if (pass.deleting) return undefined;
    return plan(pass.spec, endpoint, pass.status, pass.obj.metadata.annotations?.[restartedAtAnnotation]);
  }

  async create(pass: CePass): Promise<Answer<Endpoint, S>> {
    const { spec, obj } = pass;
    const branchId = spec.branchId ?? "";
    const name = pass.mark;
    // With the resource as its ticket: in a busy project the create is handed back with the time
    // of its turn, instead of holding a worker asleep until then.
    const result = await pass.client.createEndpoint(
      spec.projectId,
      createSpec({ ...spec, branchId }, name),
      pass.mutation(),
    );
    return {
      ...answered(result),
      status: {
        creationName: name,
        suspended: spec.suspended,
        restartedAt: obj.metadata.annotations?.[restartedAtAnnotation],
      },
      message: `created endpoint ${result.endpoint.id} on branch ${branchId}`,
    };
  }

  async apply(pass: CePass, step: Plan, endpoint: Endpoint): Promise<Answer<Endpoint, S>> {
    const { client, spec } = pass;
    const options = pass.mutation();
    switch (step.change) {
      case "start": {
        const result = await client.startEndpoint(spec.projectId, endpoint.id, options);
        return { ...answered(result), status: step.why === "resume" ? { suspended: false } : {} };
      }
      case "update":
        return answered(await client.updateEndpoint(spec.projectId, endpoint.id, step.patch, options));
      case "restart": {
        const result = await client.restartEndpoint(spec.projectId, endpoint.id, options);
        return { ...answered(result), status: { restartedAt: step.restartedAt } };
      }
      case "suspend": {
        const result = await client.suspendEndpoint(spec.projectId, endpoint.id, options);
        return { ...answered(result), status: { suspended: true } };
      }
    }
  }

  async delete(pass: CePass, endpoint: Endpoint): Promise<Answer<Endpoint, S> | "gone"> {
    try {
      const result = await pass.client.deleteEndpoint(pass.spec.projectId, endpoint.id, pass.mutation());
      return result ? { ...answered(result), message: `deleted endpoint ${endpoint.id}` } : "gone";
    } catch (err) {
      if (err instanceof NotFoundError) return "gone";
      throw err;
    }
  }

  status(endpoint: Endpoint): Partial<S> {
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

  /** As declared: the run state the spec asks for is the one applied. */
  settled(pass: CePass): Partial<S> {
    return pass.spec.managementPolicy === "ObserveOnly" ? {} : { suspended: pass.spec.suspended };
  }

  ready(endpoint: Endpoint): Verdict {
    // Serving, or suspended and ready to wake on the next connection.
    return endpoint.currentState === "active" || endpoint.currentState === "idle"
      ? ["True", "Available", `endpoint ${endpoint.id} is ${endpoint.currentState}`]
      : ["False", "EndpointState", `endpoint ${endpoint.id} is ${endpoint.currentState}`];
  }

  /** Names what the platform refused in the resource's own terms. */
  explain(err: unknown, pass: CePass, step: Plan | "create" | "delete"): unknown {
    if (step === "delete") return err;
    const branchId = pass.spec.branchId ?? "";
    if (err instanceof ConflictError) {
      const readWrite = pass.spec.type === "read_write";
      const [reason, why] = readWrite
        ? ["BranchHasReadWriteEndpoint", `branch ${branchId} already has a read-write endpoint`]
        : step === "create"
          ? ["CreateRefused", `the platform refused a read-only endpoint on branch ${branchId}`]
          : [
              "MoveRefused",
              `the platform moves an endpoint only to a branch with none; branch ${branchId} has one`,
            ];
      return new Problem(reason, `${why}: ${err.message}`, { retry: { after: Delay.conflict } });
    }
    if (err instanceof NotFoundError)
      return notFound("BranchNotFound", `branch ${branchId} not found: ${err.message}`);
    return err;
  }

  /** A second resource on a branch's one read-write endpoint, in the words a user looks for. */
  claimRefused(pass: CePass, claim: string, rival: KubeObject): Problem | undefined {
    if (!claim.startsWith("branch:")) return undefined;
    return new Problem(
      "BranchHasReadWriteEndpoint",
      `ComputeEndpoint ${objectKey(rival)} already claims the read-write endpoint of branch ${pass.spec.branchId ?? ""}`,
      { retry: { after: Delay.conflict / 2 } },
    );
  }

  observeAfterMs(pass: CePass): number | undefined {
    return observeInterval(pass.obj);
  }

  connection(pass: CePass, endpoint: Endpoint): ConnectionDetails {
    const { spec, obj } = pass;
    const configMapName = spec.connectionConfigMapName;
    const want = spec.connectionSecret;
    const resets = want
      ? branchResets(
          pass.cache<BranchObject>(branchResourceKind),
          obj.metadata.namespace,
          endpoint.branchId,
          spec.branchRef?.name,
        )
      : undefined;
    return {
      configMap: configMapName
        ? {
            name: configMapName,
            // The platform's convention (port 5432, TLS required) unless a connection Secret says
            // otherwise: then the address the platform's connection answer gave it.
            data: (address) => ({
              host: address?.host ?? endpoint.host,
              pooledHost: address?.pooledHost ?? pooledHost(endpoint),
              port: String(address?.port ?? 5432),
              endpointId: endpoint.id,
              projectId: spec.projectId,
              branchId: endpoint.branchId,
              regionId: endpoint.regionId,
              sslmode: address?.sslmode ?? "require",
            }),
          }
        : undefined,
      secret: want
        ? {
            name: want.name,
            projectId: spec.projectId,
            branchId: endpoint.branchId,
            endpointId: endpoint.id,
            host: endpoint.host,
            pooledHost: pooledHost(endpoint),
            role: want.role,
            database: want.database,
            allowPasswordReset: want.allowPasswordReset,
            branchReset: resets?.marker,
            branchSettling: resets?.settling ?? false,
          }
        : undefined,
    };
  }
}

/** The endpoint and operations a mutation answered. */
function answered(result: EndpointMutation): Answer<Endpoint, S> {
  return { object: result.endpoint, operations: result.operations };
}
