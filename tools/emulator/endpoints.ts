// The lifecycle of compute endpoints: what each request does to an endpoint
// and which operations it starts (the contract's state table).
import { restrictedAction } from "./anonymized.ts";
import { checkComputeRange } from "./compute-units.ts";
import { PlatformError, badRequest, notFound } from "./errors.ts";
import { checkEndpointType, checkPlanCompute, projectLimits } from "./plans.ts";
import { newEndpointId } from "./ids.ts";
import type {
  EndpointRecord,
  EndpointState,
  OperationAction,
  OperationRecord,
  ProjectRecord,
} from "./model.ts";
import type { CreateEndpointBody, UpdateEndpointBody } from "./requests.ts";
import { defaultEndpointSettingsOf } from "./views.ts";
import type { OperationSpec, World } from "./world.ts";

export interface EndpointChange {
  endpoint: EndpointRecord;
  operations: OperationRecord[];
}

export function findProject(world: World, projectId: string): ProjectRecord {
  const project = world.projects.get(projectId);
  if (!project) throw notFound("project");
  return project;
}

export function findEndpoint(world: World, projectId: string, endpointId: string): EndpointRecord {
  const endpoint = world.endpoints.get(endpointId);
  if (!endpoint || endpoint.projectId !== projectId) throw notFound("endpoint");
  return endpoint;
}

/**
 * The endpoint a request acts on, refused while an operation holds its branch;
 * `mustBeEnabled` refuses a disabled one too (422), before the lock is looked at.
 */
function endpointToChange(
  world: World,
  projectId: string,
  endpointId: string,
  mustBeEnabled = false,
): EndpointRecord {
  const endpoint = findEndpoint(world, projectId, endpointId);
  if (mustBeEnabled && endpoint.disabled) throw new PlatformError(422, "endpoint is disabled");
  world.assertUnlocked(projectId, [endpoint.branchId]);
  return endpoint;
}

/** The branch an endpoint is put on: it must exist, and be past its creation (422 "branch not ready yet"). */
function findReadyBranch(world: World, projectId: string, branchId: string): void {
  const branch = world.branches.get(branchId);
  if (!branch || branch.projectId !== projectId) throw notFound("branch");
  if (branch.currentState === "init") throw new PlatformError(422, "branch not ready yet");
}

export function createEndpoint(
  world: World,
  projectId: string,
  body: CreateEndpointBody,
  now: number,
  creationSource = "console",
): EndpointChange {
  const project = findProject(world, projectId);
  findReadyBranch(world, projectId, body.branch_id);
  if (body.region_id !== undefined && body.region_id !== project.regionId) {
    throw badRequest(`region_id must be the project's region ${project.regionId}`);
  }
  const { min, max } = newEndpointSize(world, project, body);
  checkEndpointType(projectLimits(world, projectId), body.type);
  if (
    body.type === "read_write" &&
    world.endpointsOfBranch(body.branch_id).some((e) => e.type === "read_write")
  ) {
    throw new PlatformError(409, "branch already has a read_write endpoint");
  }
  world.assertUnlocked(projectId, [body.branch_id]);
  const endpoint = newEndpoint(project, body, min, max, now, creationSource);
  world.addEndpoint(endpoint);
  // A disabled endpoint accepts no connections, so nothing starts it.
  const operations = endpoint.disabled ? [] : startEndpointCompute(world, endpoint, now);
  return { endpoint, operations };
}

/**
 * A new endpoint's size: one limit given makes a fixed size; none, the project's default endpoint
 * settings. Refused (400) when it is no valid size or range, or beyond the owner's plan.
 */
export function newEndpointSize(
  world: World,
  project: ProjectRecord,
  body: { autoscaling_limit_min_cu?: number | undefined; autoscaling_limit_max_cu?: number | undefined },
  prefix = "",
): { min: number; max: number } {
  const defaults = defaultEndpointSettingsOf(project);
  const min =
    body.autoscaling_limit_min_cu ?? body.autoscaling_limit_max_cu ?? defaults.autoscaling_limit_min_cu;
  const max =
    body.autoscaling_limit_max_cu ?? body.autoscaling_limit_min_cu ?? defaults.autoscaling_limit_max_cu;
  checkComputeRange(min, max, prefix);
  checkPlanCompute(projectLimits(world, project.id), min, max, prefix);
  return { min, max };
}

/** A new endpoint record with the project's or the platform's defaults for every field not given. */
export function newEndpoint(
  project: ProjectRecord,
  body: CreateEndpointBody,
  minCu: number,
  maxCu: number,
  now: number,
  creationSource: string,
): EndpointRecord {
  const disabled = body.disabled ?? false;
  return {
    id: newEndpointId(),
    projectId: project.id,
    branchId: body.branch_id,
    type: body.type,
    ...(body.name === undefined ? {} : { name: body.name }),
    minCu,
    maxCu,
    currentState: disabled ? "idle" : "init",
    pgSettings: body.settings?.pg_settings ?? {},
    poolerEnabled: body.pooler_enabled ?? false,
    disabled,
    passwordlessAccess: body.passwordless_access ?? true,
    provisioner: body.provisioner ?? project.provisioner,
    suspendTimeoutSeconds:
      body.suspend_timeout_seconds ?? defaultEndpointSettingsOf(project).suspend_timeout_seconds,
    creationSource,
    createdAt: now,
    updatedAt: now,
  };
}

export function updateEndpoint(
  world: World,
  projectId: string,
  endpointId: string,
  body: UpdateEndpointBody,
  now: number,
): EndpointChange {
  const endpoint = findEndpoint(world, projectId, endpointId);
  let min = body.autoscaling_limit_min_cu ?? endpoint.minCu;
  let max = body.autoscaling_limit_max_cu ?? endpoint.maxCu;
  // One limit sent alone moves the other along rather than inverting the pair.
  if (body.autoscaling_limit_max_cu === undefined) max = Math.max(min, max);
  if (body.autoscaling_limit_min_cu === undefined) min = Math.min(min, max);
  checkComputeRange(min, max);
  checkPlanCompute(projectLimits(world, projectId), min, max);
  const targetBranch = body.branch_id === endpoint.branchId ? undefined : body.branch_id;
  const branchChanged = targetBranch !== undefined;
  if (targetBranch !== undefined) {
    findReadyBranch(world, projectId, targetBranch);
    if (world.endpointsOfBranch(targetBranch).length > 0) {
      throw new PlatformError(409, "the target branch already has an endpoint");
    }
  }
  world.assertUnlocked(
    projectId,
    targetBranch === undefined ? [endpoint.branchId] : [endpoint.branchId, targetBranch],
  );

  const sizeChanged = min !== endpoint.minCu || max !== endpoint.maxCu;
  const disabling = body.disabled === true && !endpoint.disabled;
  if (targetBranch !== undefined) endpoint.branchId = targetBranch;
  endpoint.minCu = min;
  endpoint.maxCu = max;
  if (body.name !== undefined) endpoint.name = body.name;
  if (body.provisioner !== undefined) endpoint.provisioner = body.provisioner;
  if (body.settings?.pg_settings !== undefined) endpoint.pgSettings = body.settings.pg_settings;
  if (body.pooler_enabled !== undefined) endpoint.poolerEnabled = body.pooler_enabled;
  if (body.disabled !== undefined) endpoint.disabled = body.disabled;
  if (body.passwordless_access !== undefined) endpoint.passwordlessAccess = body.passwordless_access;
  if (body.suspend_timeout_seconds !== undefined) {
    // Autosuspend changes need no restart: only the timer moves.
    endpoint.suspendTimeoutSeconds = body.suspend_timeout_seconds;
    world.scheduleAutosuspend(endpoint);
  }
  world.touch(endpoint, now);

  const specs: OperationSpec[] = [applyConfig(endpoint)];
  let pending: EndpointState = endpoint.currentState;
  if (endpoint.currentState === "active" && disabling) {
    specs.push(suspendCompute(endpoint));
    pending = "idle";
  } else if (endpoint.currentState === "active" && (sizeChanged || branchChanged)) {
    // A new size or branch restarts the compute, dropping its connections.
    specs.push(suspendCompute(endpoint), startCompute(endpoint));
  } else if (endpoint.currentState === "idle" && branchChanged) {
    specs.push(suspendCompute(endpoint));
  }
  const operations = world.startOperations(projectId, specs, now, pending);
  return { endpoint, operations };
}

export function deleteEndpoint(
  world: World,
  projectId: string,
  endpointId: string,
  now: number,
): EndpointChange {
  const found = findEndpoint(world, projectId, endpointId);
  const branch = world.branches.get(found.branchId);
  const restricted = found.type === "read_write" && branch && restrictedAction(branch, "delete-rw-endpoint");
  if (restricted) throw new PlatformError(422, restricted);
  const endpoint = endpointToChange(world, projectId, endpointId);
  // A running compute is stopped as it goes; an idle one just disappears.
  const operations =
    endpoint.currentState === "active"
      ? world.startOperations(projectId, [suspendCompute(endpoint)], now)
      : [];
  world.removeEndpoint(endpoint);
  return { endpoint, operations };
}

export function startEndpoint(
  world: World,
  projectId: string,
  endpointId: string,
  now: number,
): EndpointChange {
  const endpoint = endpointToChange(world, projectId, endpointId, true);
  const operations = endpoint.currentState === "active" ? [] : startEndpointCompute(world, endpoint, now);
  return { endpoint, operations };
}

export function suspendEndpoint(
  world: World,
  projectId: string,
  endpointId: string,
  now: number,
): EndpointChange {
  const endpoint = endpointToChange(world, projectId, endpointId);
  const operations =
    endpoint.currentState === "active"
      ? world.startOperations(projectId, [suspendCompute(endpoint)], now, "idle")
      : [];
  return { endpoint, operations };
}

/** Restart = suspend then start; an idle endpoint only starts. */
export function restartEndpoint(
  world: World,
  projectId: string,
  endpointId: string,
  now: number,
): EndpointChange {
  const endpoint = endpointToChange(world, projectId, endpointId, true);
  const specs =
    endpoint.currentState === "active"
      ? [suspendCompute(endpoint), startCompute(endpoint)]
      : [startCompute(endpoint)];
  return { endpoint, operations: world.startOperations(projectId, specs, now, "active") };
}

/**
 * A database client connects: an idle endpoint is woken by the control plane
 * (no project lock applies), an active one just counts as active again.
 */
export function connectToEndpoint(world: World, endpointId: string, now: number): EndpointChange {
  const endpoint = world.endpoints.get(endpointId);
  if (!endpoint) throw notFound("endpoint");
  if (endpoint.disabled) throw new PlatformError(422, "endpoint is disabled");
  if (endpoint.pendingState !== undefined) return { endpoint, operations: [] };
  if (endpoint.currentState === "active") {
    world.recordActivity(endpoint, now);
    return { endpoint, operations: [] };
  }
  return {
    endpoint,
    operations: startEndpointCompute(world, endpoint, now),
  };
}

/** Starts an endpoint's compute; the endpoint is `active` once the operation finishes. */
function startEndpointCompute(world: World, endpoint: EndpointRecord, now: number): OperationRecord[] {
  return world.startOperations(endpoint.projectId, [startCompute(endpoint)], now, "active");
}

/** An operation on one endpoint's compute, on the branch it is attached to now. */
const computeOperation =
  (action: OperationAction) =>
  (e: EndpointRecord): OperationSpec => ({ action, branchId: e.branchId, endpointId: e.id });
const startCompute = computeOperation("start_compute");
const suspendCompute = computeOperation("suspend_compute");
const applyConfig = computeOperation("apply_config");
