// The status a ComputeEndpoint shows: what the platform says of its endpoint,
// the operations of the last change, and conditions a user can act on.
import type { ComputeEndpointStatus, EndpointOperation } from "../api/computeendpoint.ts";
import type { Endpoint, Operation } from "../platform/index.ts";
import { isSettled } from "../platform/index.ts";
import { maxConnectionsFor, pooledHost } from "./computeendpoint-desired.ts";

/** The endpoint's own fields, as `kubectl get -o yaml` should show them. */
export function observedFields(endpoint: Endpoint): Partial<ComputeEndpointStatus> {
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

export function statusOperations(operations: readonly Operation[]): EndpointOperation[] {
  return operations.map((op) => ({
    id: op.id,
    action: op.action,
    status: op.status,
    failuresCount: op.failuresCount,
    createdAt: op.createdAt,
    updatedAt: op.updatedAt,
    ...(op.retryAt === undefined ? {} : { retryAt: op.retryAt }),
  }));
}

/**
 * The operations in status, in the client's shape, so its tracker can report them as last seen
 * without a request while the account's budget is busy with changes.
 */
export function trackedOperations(
  operations: readonly EndpointOperation[],
  projectId: string,
  endpointId: string | undefined,
): Operation[] {
  return operations.map((op) => ({
    ...op,
    projectId,
    branchId: undefined,
    endpointId,
    error: undefined,
    retryAt: op.retryAt,
    totalDurationMs: undefined,
  }));
}

export function operationsRunning(operations: readonly EndpointOperation[] | undefined): boolean {
  return (operations ?? []).some((op) => !isSettled(op));
}

/** The same operations in the same states (nothing new to tell a user). */
export function sameOperations(
  a: readonly EndpointOperation[] | undefined,
  b: readonly EndpointOperation[],
): boolean {
  return (
    a?.length === b.length &&
    a.every(
      (op, i) => op.id === b[i]?.id && op.status === b[i].status && op.failuresCount === b[i].failuresCount,
    )
  );
}
