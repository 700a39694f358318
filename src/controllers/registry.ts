// Where the kinds are registered: each kind with its own options (its folder's index.ts), and the
// options that join two kinds, composed here so no kind folder imports another: a Branch's create
// carries the endpoint of a ComputeEndpoint naming it. The controllers run on the managed layer,
// reading the platform's answers as refusals (refusals.ts).
import type { Controller, ControllerOptions, KubeObject } from "../runtime/index.ts";
import { apiKey, type ApiKeyObject, type ApiKeyTuning } from "./apikey/index.ts";
import { branch, comesWithReadWriteEndpoint, type BranchObject } from "./branch/index.ts";
import {
  computeEndpoint,
  computeEndpointCarried,
  type ComputeEndpointObject,
} from "./computeendpoint/index.ts";
import { managedController, type ManagedControllerOptions } from "./managed/controller.ts";
import { withCarried, type AnyManaged } from "./managed/features.ts";
import type { ControllerFactory, KindControllerOptions } from "./options.ts";
import { project, type ProjectObject } from "./project/index.ts";
import { snapshot, type SnapshotObject } from "./snapshot/index.ts";
import { platformRefusal } from "./refusals.ts";
import type { PlatformClient } from "../platform/index.ts";
import type { BranchSpec, BranchStatus } from "../api/branch.ts";

function managedOptions(options: KindControllerOptions): ManagedControllerOptions<PlatformClient> {
  return { ...options, classify: platformRefusal };
}

function run<T extends KubeObject>(
  m: AnyManaged,
  options: KindControllerOptions,
  create?: ControllerFactory<T>,
) {
  return managedController(
    m,
    managedOptions(options),
    create as ((o: ControllerOptions<KubeObject>) => Controller<KubeObject>) | undefined,
  ) as unknown as Controller<T>;
}

/** The ComputeEndpoint controller; `create` lets a Manager own it (default: standalone, for tests). */
export function computeEndpointController(
  options: KindControllerOptions,
  create?: ControllerFactory<ComputeEndpointObject>,
): Controller<ComputeEndpointObject> {
  return run(computeEndpoint(options), options, create);
}

/**
 * The Branch controller: its create makes the read-write endpoint of a ComputeEndpoint naming it,
 * and a masked branch's, made by the platform unasked, is handed to one afterwards.
 */
export function branchController(
  options: KindControllerOptions,
  create?: ControllerFactory<BranchObject>,
): Controller<BranchObject> {
  const endpoints = withCarried<BranchSpec, BranchStatus, PlatformClient>(
    computeEndpointCarried(computeEndpoint(options)),
    { unasked: comesWithReadWriteEndpoint },
  );
  return run(branch(options, endpoints), options, create);
}

export function projectController(
  options: KindControllerOptions,
  create?: ControllerFactory<ProjectObject>,
): Controller<ProjectObject> {
  return run(project(options), options, create);
}

export function apiKeyController(
  options: KindControllerOptions,
  create?: ControllerFactory<ApiKeyObject>,
  tuning: ApiKeyTuning = {},
): Controller<ApiKeyObject> {
  return run(apiKey(options, tuning), options, create);
}

export function snapshotController(
  options: KindControllerOptions,
  create?: ControllerFactory<SnapshotObject>,
): Controller<SnapshotObject> {
  return run(snapshot(options), options, create);
}

/** Every kind's controller, as the operator runs them. */
export function kindControllers(
  options: KindControllerOptions,
  create: ControllerFactory<KubeObject>,
): Controller<KubeObject>[] {
  const as = <T extends KubeObject>(c: Controller<T>) => c as unknown as Controller<KubeObject>;
  return [
    as(computeEndpointController(options, create as unknown as ControllerFactory<ComputeEndpointObject>)),
    as(apiKeyController(options, create as unknown as ControllerFactory<ApiKeyObject>)),
    as(branchController(options, create as unknown as ControllerFactory<BranchObject>)),
    as(projectController(options, create as unknown as ControllerFactory<ProjectObject>)),
    as(snapshotController(options, create as unknown as ControllerFactory<SnapshotObject>)),
  ];
}
