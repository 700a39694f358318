// The runtime's public surface, for controllers and the operator's entry point.
export { Action } from "./action.ts";
export { whenApiServerAnswers, type WaitOptions } from "./api-server.ts";
export { TerminalError, classifyError, errorMessage, type ErrorAction, type ErrorPolicy } from "./errors.ts";
export {
  Controller,
  type Context,
  type ControllerOptions,
  type ControllerDeps,
  type OwnsSpec,
  type Reconciler,
  type WatchSpec,
} from "./controller.ts";
export * from "./conditions.ts";
export {
  ConfigError,
  boolean,
  dnsLabel,
  duration,
  integer,
  loadSettings,
  parseDuration,
  runtimeSettings,
  setting,
  settingsHelp,
  type ConfigOf,
  type RuntimeConfig,
  type Setting,
  type Settings,
} from "./config.ts";
export { EventRecorder, eventKind, type EventInput, type EventType } from "./events.ts";
export { addFinalizer, removeFinalizer, hasFinalizer } from "./finalizers.ts";
export {
  Informer,
  type IndexFunc,
  type InformerHandlers,
  type InformerOptions,
  type Store,
} from "./informer.ts";
export * from "./kube.ts";
export { controllerReference, isControlledBy } from "./ownership.ts";
export { LeaderElector, leaseKind, type LeaderElectionOptions, type LeaderCallbacks } from "./leader.ts";
export {
  createLogger,
  currentReconcile,
  inReconcile,
  loggerOptions,
  serializeError,
  silentLogger,
  type Logger,
  type ReconcileLogContext,
} from "./log.ts";
export { Manager, managerOptionsFromConfig, terminationSignal, type ManagerOptions } from "./manager.ts";
export {
  Metrics,
  createMetrics,
  type ReconcileResult,
  type WorkQueueMetrics,
  type WorkQueueSample,
} from "./metrics.ts";
export { startServer, type RunningServer, type ServerOptions } from "./server.ts";
export { StatusWriter, jsonEqual, mergePatchFor, type StatusPatchOptions } from "./status.ts";
export { metadataOnly, stripManagedFields, type CacheTransform } from "./transform.ts";
export {
  WorkQueue,
  backoffDelay,
  jittered,
  type BackoffOptions,
  type WorkQueueOptions,
} from "./workqueue.ts";
export { parseLabelSelector, type LabelSelector, type Labels } from "./label-selector.ts";
export { handedOver, type Shard } from "./shard.ts";
export { SharedInformers } from "./shared-informers.ts";
