/**
 * The platform's anonymized branches (snake_case wire, camelCase for the operator), after the
 * official OpenAPI document's `BranchAnonymizedCreateRequest`, `MaskingRule`,
 * `MaskingRulesResponse` and `AnonymizedBranchStatusResponse` (`public-v2-for-users.gen.yaml`).
 */
import { z } from "zod";
import { branchBody, type BranchCreateSpec } from "./branch-schemas.ts";
import type { Operation } from "./schemas.ts";

/** Which column to mask and how: a masking function (`anon.fake_email()`) or a literal value. */
export interface MaskingRule {
  databaseName: string;
  schemaName: string;
  tableName: string;
  columnName: string;
  /** A PostgreSQL Anonymizer expression; not with `maskingValue`. */
  maskingFunction?: string | undefined;
  /** An SQL literal (`'REDACTED'`, `0`, `NULL`); not with `maskingFunction`. */
  maskingValue?: string | undefined;
}

const maskingRuleWire = z
  .object({
    database_name: z.string(),
    schema_name: z.string(),
    table_name: z.string(),
    column_name: z.string(),
    masking_function: z.string().optional(),
    masking_value: z.string().optional(),
  })
  .transform((r): MaskingRule => ({
    databaseName: r.database_name,
    schemaName: r.schema_name,
    tableName: r.table_name,
    columnName: r.column_name,
    maskingFunction: r.masking_function,
    maskingValue: r.masking_value,
  }));

export const maskingRulesWire = z.object({ masking_rules: z.array(maskingRuleWire) });

/** A rules update answers the rules: it starts no operation (a run is `anonymize`'s). */
export const maskingRulesChangedWire = maskingRulesWire.transform((r) => ({
  maskingRules: r.masking_rules,
  operations: [] as Operation[],
}));

export const anonymizedStatusWire = z
  .object({
    project_id: z.string(),
    branch_id: z.string(),
    // created, initialized, initialization_error, anonymizing, anonymized or error in the document.
    state: z.string(),
    status_message: z.string().optional(),
    created_at: z.string(),
    updated_at: z.string(),
    failed_at: z.string().optional(),
    last_run: z
      .object({
        started_at: z.string().optional(),
        completed_at: z.string().optional(),
        triggered_by: z.string().optional(),
        masked_columns: z.number().int().optional(),
      })
      .optional(),
  })
  .transform((s) => ({
    projectId: s.project_id,
    branchId: s.branch_id,
    state: s.state,
    statusMessage: s.status_message,
    createdAt: s.created_at,
    updatedAt: s.updated_at,
    failedAt: s.failed_at,
    lastRun:
      s.last_run === undefined
        ? undefined
        : {
            startedAt: s.last_run.started_at,
            completedAt: s.last_run.completed_at,
            maskedColumns: s.last_run.masked_columns,
          },
  }));
export type AnonymizedStatus = z.output<typeof anonymizedStatusWire>;

/** `anonymize` answers the state the run starts in: it starts no operation. */
export const anonymizationStartedWire = anonymizedStatusWire.transform((status) => ({
  status,
  operations: [] as Operation[],
}));

export function maskingRulesBody(rules: readonly MaskingRule[]): { masking_rules: Record<string, string>[] } {
  return {
    masking_rules: rules.map((r) => ({
      database_name: r.databaseName,
      schema_name: r.schemaName,
      table_name: r.tableName,
      column_name: r.columnName,
      ...(r.maskingFunction === undefined ? {} : { masking_function: r.maskingFunction }),
      ...(r.maskingValue === undefined ? {} : { masking_value: r.maskingValue }),
    })),
  };
}

/** An anonymized branch: a branch of its parent, its rules, and whether to run them once it is ready. */
export interface AnonymizedBranchSpec {
  branch?: BranchCreateSpec;
  maskingRules?: MaskingRule[];
  startAnonymization?: boolean;
}

export function anonymizedBranchBody(spec: AnonymizedBranchSpec): Record<string, unknown> {
  const { annotation_value, ...create } = branchBody(spec.branch ?? {});
  return {
    branch_create: create,
    ...(annotation_value === undefined ? {} : { annotation_value }),
    ...(spec.maskingRules === undefined ? {} : maskingRulesBody(spec.maskingRules)),
    ...(spec.startAnonymization === undefined ? {} : { start_anonymization: spec.startAnonymization }),
  };
}
