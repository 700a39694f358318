// What a Branch keeps of its data besides the branch itself: its masking rules, applied again when
// they change (the platform's anonymized branches), and its backup schedule, kept as declared. The
// one change due, decided from the spec, what status recorded, and what the platform shows. Pure.
import { createHash } from "node:crypto";
import type { BackupScheduleItem, BranchSpec, BranchStatus } from "../../api/branch.ts";
import type {
  AnonymizedStatus,
  BackupScheduleItem as PlatformScheduleItem,
  MaskingRule as PlatformRule,
} from "../../platform/index.ts";
import { parseDuration } from "../../runtime/index.ts";
import type { Step } from "../managed/kind.ts";

export type DataStep = Step &
  (
    | { change: "maskingRules"; rules: PlatformRule[] }
    | { change: "anonymize"; applies: string }
    | { change: "backupSchedule"; schedule: PlatformScheduleItem[] }
  );

/** A digest of masking rules, order kept (the platform applies them in order). */
export function rulesDigest(rules: readonly PlatformRule[]): string {
  const parts = rules.map((r) =>
    [
      r.databaseName,
      r.schemaName,
      r.tableName,
      r.columnName,
      r.maskingFunction ?? "",
      r.maskingValue ?? "",
    ].join("\u0000"),
  );
  return createHash("sha256").update(parts.join("\u0001")).digest("hex").slice(0, 16);
}

/**
 * The masking step due: the platform's rules made the spec's, then a run over the data whose rules
 * were not applied yet. Undefined: as declared, or a run under way.
 */
export function maskingStep(
  wanted: readonly PlatformRule[],
  shown: readonly PlatformRule[],
  status: BranchStatus,
  anonymized: AnonymizedStatus,
): DataStep | undefined {
  const digest = rulesDigest(wanted);
  if (rulesDigest(shown) !== digest) {
    return {
      action: "UpdateMasking",
      reason: "UpdatingMasking",
      message: "replacing the branch's masking rules",
      change: "maskingRules",
      rules: [...wanted],
    };
  }
  const running =
    anonymized.state === "anonymizing" ||
    anonymized.state === "created" ||
    anonymized.state === "initialized";
  if (running || status.masking?.appliedRules === digest) return undefined;
  return {
    action: "Anonymize",
    reason: "Masking",
    message: "masking the branch's data with its rules again",
    change: "anonymize",
    applies: digest,
  };
}

/** A schedule as the platform takes it (retention in seconds). */
export function platformSchedule(items: readonly BackupScheduleItem[]): PlatformScheduleItem[] {
  return items.map((i) => ({
    frequency: i.frequency,
    hour: i.hour,
    day: i.day,
    retentionSeconds:
      i.retention === undefined ? undefined : Math.round((parseDuration(i.retention) ?? 0) / 1000),
  }));
}

const scheduleKey = (items: readonly PlatformScheduleItem[]) =>
  JSON.stringify(items.map((i) => [i.frequency, i.hour ?? null, i.day ?? null, i.retentionSeconds ?? null]));

/** The schedule step due: the platform's schedule made the spec's (drift repaired). */
export function scheduleStep(spec: BranchSpec, shown: readonly PlatformScheduleItem[]): DataStep | undefined {
  if (spec.backupSchedule === undefined) return undefined;
  const wanted = platformSchedule(spec.backupSchedule);
  if (scheduleKey(wanted) === scheduleKey(shown)) return undefined;
  return {
    action: "UpdateBackupSchedule",
    reason: "UpdatingBackupSchedule",
    message: "setting the branch's backup schedule",
    change: "backupSchedule",
    schedule: wanted,
  };
}

/** Ready while its data is masked as declared: a run under way, or one that failed, is not. */
export function maskedReady(anonymized: AnonymizedStatus | undefined): [boolean, string] | undefined {
  if (anonymized === undefined) return undefined;
  if (anonymized.state === "anonymized") return undefined;
  return [
    false,
    `masking ${anonymized.state}${anonymized.statusMessage ? `: ${anonymized.statusMessage}` : ""}`,
  ];
}
