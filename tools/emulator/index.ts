// The platform emulator's public surface, for tests, benchmarks, the sandbox and the CLI.
export { startEmulator, apiPrefix, type Emulator, type EmulatorOptions } from "./emulator.ts";
export { adminPrefix } from "./admin-routes.ts";
export { createClock, createManualClock, type Clock, type ClockOptions, type ManualClock } from "./clock.ts";
export { Faults, faultsSchema, type FaultsConfig, type RequestFault } from "./faults.ts";
export { platformRateLimits, type RateLimits } from "./rate-limit.ts";
export type { RequestLog, RequestLogEntry } from "./request-log.ts";
export { loadSeedFile, parseSeed, seedSchema, type Seed } from "./seed.ts";
export { emulatorUsage, parseEmulatorArgs, runEmulatorCommand, UsageError } from "./cli.ts";
