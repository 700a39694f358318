// From a Project's spec to what the platform should hold: the create body, and the one PATCH of
// exactly the fields that differ. Only what the spec states is managed: a field, or a part of one,
// left out is never sent, so never unset. Pure functions, table-tested in plan.test.ts.
import type { ProjectSpec } from "../../api/project.ts";
import {
  suspendTimeoutSeconds,
  type DefaultEndpointSettings,
  type PlatformProject,
  type ProjectCreateSpec,
  type ProjectPatch,
} from "../../platform/index.ts";
import { parseDuration } from "../../runtime/index.ts";
import { ownerAnnotation } from "../managed/installation.ts";
import type { Step } from "../managed/kind.ts";
import { invalidSpec } from "../managed/refusal.ts";

/** The one change a Project makes: a PATCH of the fields that differ. */
export type Plan = Step & { change: "update"; patch: ProjectPatch };

/** spec.historyRetention in the platform's seconds. */
function retentionSeconds(spec: ProjectSpec): number | undefined {
  if (spec.historyRetention === undefined) return undefined;
  const ms = parseDuration(spec.historyRetention);
  if (ms === undefined)
    throw invalidSpec(`spec.historyRetention: "${spec.historyRetention}" is not a duration`);
  return Math.floor(ms / 1000);
}

/** spec.defaultEndpointSettings.autosuspend as the platform's `suspend_timeout_seconds`. */
function suspendTimeout(autosuspend: string): number {
  const ms = autosuspend === "never" ? "never" : parseDuration(autosuspend);
  if (ms === undefined)
    throw invalidSpec(`spec.defaultEndpointSettings.autosuspend: "${autosuspend}" is not a duration`);
  return suspendTimeoutSeconds(ms);
}

/** The default endpoint settings the spec states, and only those. */
function declaredDefaults(spec: ProjectSpec): DefaultEndpointSettings | undefined {
  const d = spec.defaultEndpointSettings;
  if (d === undefined) return undefined;
  return {
    autoscalingLimitMinCu: d.computeUnits?.min,
    autoscalingLimitMaxCu: d.computeUnits && (d.computeUnits.max ?? d.computeUnits.min),
    suspendTimeoutSeconds: d.autosuspend === undefined ? undefined : suspendTimeout(d.autosuspend),
    pgSettings: d.pgSettings,
  };
}

/** What the spec manages of the project's changeable fields (undefined: not managed). */
function declared(spec: ProjectSpec): ProjectPatch {
  return {
    name: spec.name,
    historyRetentionSeconds: retentionSeconds(spec),
    defaultEndpointSettings: declaredDefaults(spec),
    settings: spec.settings,
  };
}

/** The create body: everything the spec states, named `name`, the default branch carrying `mark`. */
export function createSpec(spec: ProjectSpec, name: string, mark: string): ProjectCreateSpec {
  return {
    ...declared(spec),
    name,
    regionId: spec.regionId,
    pgVersion: spec.pgVersion,
    orgId: spec.orgId,
    branch: { ...spec.defaultBranch, annotations: { [ownerAnnotation]: mark } },
  };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Whether `have` holds what `want` declares: a part `want` leaves out is not compared, lists are
 * sets (an allow-list, weekdays), and a value the platform does not show reads as its zero value
 * (off, 0 = unlimited, none).
 */
function holds(want: unknown, have: unknown): boolean {
  if (Array.isArray(want)) {
    const list: unknown[] = Array.isArray(have) ? have : [];
    return want.length === list.length && want.every((x) => list.includes(x));
  }
  if (isObject(want)) {
    return Object.entries(want).every(
      ([k, v]) => v === undefined || holds(v, isObject(have) ? have[k] : undefined),
    );
  }
  return have === undefined ? want === false || want === 0 : want === have;
}

/**
 * `want` over `have`: the platform replaces a value sent whole, so what the spec leaves out of it
 * is sent as the platform has it (an allow-list's protectedBranchesOnly, a quota's other limits).
 */
function merge(have: unknown, want: unknown): unknown {
  if (!isObject(want) || !isObject(have)) return want;
  const out = { ...have };
  for (const [k, v] of Object.entries(want)) if (v !== undefined) out[k] = merge(have[k], v);
  return out;
}

/** The fields of `want` that `have` does not hold, each with its whole new value. */
function changes<T extends object>(want: T, have: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(want)) {
    const current = (have as Record<string, unknown>)[k];
    if (v !== undefined && !holds(v, current)) out[k] = merge(current, v);
  }
  return out as Partial<T>;
}

/** Exactly the fields whose declared value differs from the project's. */
export function difference(spec: ProjectSpec, project: PlatformProject): ProjectPatch {
  const { settings, ...fields } = declared(spec);
  const patch: ProjectPatch = changes(fields, project);
  const changed = changes(settings ?? {}, project.settings);
  return Object.keys(changed).length > 0 ? { ...patch, settings: changed } : patch;
}

/** The one PATCH the project needs, or undefined when it is as declared. */
export function plan(spec: ProjectSpec, project: PlatformProject): Plan | undefined {
  const patch = difference(spec, project);
  const names = [
    ...Object.keys(patch).filter((k) => k !== "settings"),
    ...Object.keys(patch.settings ?? {}).map((k) => `settings.${k}`),
  ];
  if (names.length === 0) return undefined;
  const suspends = patch.settings?.enableLogicalReplication === true;
  return {
    action: "Update",
    reason: "Updating",
    message:
      `updating ${names.join(", ")}` +
      (suspends ? " (turning logical replication on suspends the project's active endpoints)" : ""),
    change: "update",
    patch,
  };
}

/**
 * What the spec asks that no change can give, so nothing is sent: a project's region, version and
 * organization are fixed at its creation (an adopted project's may differ), and logical
 * replication once on stays on. Undefined: nothing is refused.
 */
export function refusal(spec: ProjectSpec, project: PlatformProject): string | undefined {
  const fixed = [
    ["regionId", spec.regionId, project.regionId, "region"],
    ["pgVersion", spec.pgVersion, project.pgVersion, "Postgres version"],
    ["orgId", spec.orgId, project.orgId, "organization"],
  ] as const;
  for (const [field, want, have, what] of fixed) {
    if (want !== undefined && want !== have) {
      return `spec.${field} ${want} differs from project ${project.id}'s ${what} ${have ?? "(none)"}: a project's ${what} is fixed at its creation, and a Project is never replaced; set spec.${field} to ${have ?? "nothing"} or remove it`;
    }
  }
  if (
    spec.settings?.enableLogicalReplication === false &&
    project.settings.enableLogicalReplication === true
  ) {
    return `project ${project.id} has logical replication on, which the platform never turns off (its computes keep wal_level=logical): set spec.settings.enableLogicalReplication to true or remove it`;
  }
  return undefined;
}
