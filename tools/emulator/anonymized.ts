// Anonymized branches (`branch_anonymized`): a child branch whose data PostgreSQL Anonymizer
// masks in place, by rules kept with the branch. The states are the document's: `created` until
// its `create_branch` finishes (`initialization_error` if it fails), `initialized`, then
// `anonymizing` while a run masks the data (the branch refuses connections meanwhile) and
// `anonymized`, or `error`. A run masks the branch's current data, already masked or not, as the
// platform's does; changing the rules does not run them: `anonymize` does.
import { branchesOfProject, createBranch, type BranchChange } from "./branches.ts";
import { databasesOf } from "./catalog.ts";
import { PlatformError } from "./errors.ts";
import { checkColumns, compileRules } from "./masking/rules.ts";
import type { AccountRecord, AnonymizationRecord, BranchRecord, MaskingRule } from "./model.ts";
import { seededRandom } from "./random.ts";
import type { CreateAnonymizedBranchBody } from "./requests.ts";
import type { ColumnInfo, World } from "./world.ts";

/**
 * The actions the platform refuses on an anonymized branch, with its reasons (its
 * `restricted_actions`, from the document's example answer).
 */
const restrictions = [
  { name: "restore", reason: "cannot restore anonymized branches" },
  { name: "delete-rw-endpoint", reason: "cannot delete read-write endpoints for anonymized branches" },
] as const;

export function restrictedActionsOf(branch: BranchRecord): readonly { name: string; reason: string }[] {
  return branch.anonymization === undefined ? [] : restrictions;
}

/** The reason the platform refuses `action` on the branch, or undefined when it allows it. */
export function restrictedAction(
  branch: BranchRecord,
  action: (typeof restrictions)[number]["name"],
): string | undefined {
  return restrictedActionsOf(branch).find((r) => r.name === action)?.reason;
}

/** The branch's anonymization; 404 for a branch that is not an anonymized one. */
export function anonymizationOf(branch: BranchRecord): AnonymizationRecord {
  if (!branch.anonymization) throw new PlatformError(404, `branch ${branch.id} is not an anonymized branch`);
  return branch.anonymization;
}

/**
 * Checks rules against the branch whose data they will mask: each names a database of its catalog
 * and, where the emulator has the data, a table and column that exist (400 naming the rule).
 */
async function checkRules(world: World, branch: BranchRecord, rules: readonly MaskingRule[]): Promise<void> {
  const compiled = compileRules(rules);
  const columns = new Map<string, ColumnInfo[]>();
  for (const { rule, index } of compiled) {
    if (columns.has(rule.database_name)) continue;
    const database = databasesOf(branch).find((d) => d.name === rule.database_name);
    if (!database) {
      throw new PlatformError(
        400,
        `masking_rules[${index}].database_name: database ${rule.database_name} does not exist on branch ${branch.id}`,
      );
    }
    if (world.data) columns.set(rule.database_name, await world.data.columns(branch, database));
  }
  // Without the emulator's Postgres there is no data to check the tables and columns against.
  if (world.data) checkColumns(compiled, columns);
}

/**
 * Creates an anonymized branch of the parent (`branch_create`): a child with a read-write endpoint
 * (the document's example shows one though none was asked for), its rules, and, with
 * `start_anonymization`, a run as soon as it is ready.
 */
export async function createAnonymizedBranch(
  world: World,
  projectId: string,
  body: CreateAnonymizedBranchBody,
  now: number,
): Promise<BranchChange> {
  const request = body.branch_create ?? {};
  const parentId = request.branch?.parent_id;
  const parent =
    parentId === undefined
      ? branchesOfProject(world, projectId).find((b) => b.primary)
      : world.branches.get(parentId);
  if (!parent || parent.projectId !== projectId) throw new PlatformError(404, "parent branch not found");
  if (request.branch?.init_source === "schema-only") {
    throw new PlatformError(
      400,
      "branch_create.branch.init_source: an anonymized branch has its parent's data",
    );
  }
  const project = world.projects.get(projectId);
  if ((project?.settings?.allowed_ips?.ips?.length ?? 0) > 0) {
    // The platform's documented limitation.
    throw new PlatformError(422, "anonymized branches are not supported in projects with IP Allow enabled");
  }
  const rules = body.masking_rules ?? [];
  // The child starts with the parent's data: the rules must fit it.
  await checkRules(world, parent, rules);
  const endpoints = request.endpoints?.some((e) => e.type === "read_write")
    ? request.endpoints
    : [...(request.endpoints ?? []), { type: "read_write" as const }];
  const change = createBranch(
    world,
    projectId,
    {
      ...request,
      endpoints,
      ...(body.annotation_value === undefined ? {} : { annotation_value: body.annotation_value }),
    },
    now,
  );
  change.branch.anonymization = {
    state: "created",
    rules,
    startWhenReady: body.start_anonymization ?? false,
    createdAt: now,
    updatedAt: now,
    runs: 0,
  };
  return change;
}

/** Replaces the branch's rules (all of them, as the document says); they run at the next `anonymize`. */
export async function updateMaskingRules(
  world: World,
  branch: BranchRecord,
  rules: MaskingRule[],
  now: number,
): Promise<MaskingRule[]> {
  const anonymization = anonymizationOf(branch);
  await checkRules(world, branch, rules);
  if (anonymization.state === "anonymizing") {
    throw new PlatformError(
      422,
      `branch ${branch.id} is being anonymized; change its rules once the run ends`,
    );
  }
  world.assertUnlocked(branch.projectId, [branch.id]);
  anonymization.rules = rules;
  anonymization.updatedAt = now;
  world.changed();
  return rules;
}

/** `anonymize`: a run of the rules, in the states the document allows it from. */
export function startAnonymization(
  world: World,
  branch: BranchRecord,
  account: AccountRecord,
  now: number,
): AnonymizationRecord {
  const anonymization = anonymizationOf(branch);
  if (!["initialized", "error", "anonymized"].includes(anonymization.state)) {
    throw new PlatformError(
      422,
      `anonymization starts only from the initialized, error or anonymized state; branch ${branch.id} is ${anonymization.state}`,
    );
  }
  world.assertUnlocked(branch.projectId, [branch.id]);
  run(world, branch, anonymization, account.kind === "user" ? account.id : undefined, now);
  return anonymization;
}

/** The branch's `create_branch` finished: it is initialized, and runs its rules if asked to. */
export function anonymizeWhenReady(world: World, branch: BranchRecord, at: number): void {
  const anonymization = branch.anonymization;
  if (anonymization?.state !== "created") return;
  anonymization.state = "initialized";
  anonymization.updatedAt = at;
  if (anonymization.startWhenReady) run(world, branch, anonymization, undefined, at);
}

/** The branch's `create_branch` ended in error. */
export function initializationFailed(world: World, branch: BranchRecord, at: number): void {
  const anonymization = branch.anonymization;
  if (anonymization?.state !== "created") return;
  anonymization.state = "initialization_error";
  anonymization.statusMessage = "the branch could not be created";
  anonymization.failedAt = at;
  anonymization.updatedAt = at;
  world.changed();
}

/** A run: the branch refuses connections (its open ones drop) until the masking ends. */
function run(
  world: World,
  branch: BranchRecord,
  anonymization: AnonymizationRecord,
  triggeredBy: string | undefined,
  at: number,
): void {
  anonymization.runs++;
  anonymization.state = "anonymizing";
  anonymization.statusMessage = `Anonymizing ${anonymization.rules.length} masking rules`;
  anonymization.updatedAt = at;
  delete anonymization.failedAt;
  anonymization.lastRun = { startedAt: at, ...(triggeredBy === undefined ? {} : { triggeredBy }) };
  for (const endpoint of world.endpointsOfBranch(branch.id)) world.data?.configApplied(endpoint.id);
  world.changed();
  // Each run draws its own values: the same emulator seed and runs give the same values.
  const random = seededRandom(world.maskingSeeds());
  const masking = world.data ? world.data.mask(branch, anonymization.rules, random) : Promise.resolve(0);
  const runs = anonymization.runs;
  masking.then(
    (maskedColumns) => {
      if (anonymization.runs !== runs) return;
      const done = world.clock.now();
      const tables = new Set(
        anonymization.rules.map((r) => `${r.database_name}.${r.schema_name}.${r.table_name}`),
      );
      anonymization.state = "anonymized";
      anonymization.statusMessage = `Anonymization completed successfully (${tables.size} tables, ${anonymization.rules.length} masking rules applied)`;
      anonymization.updatedAt = done;
      anonymization.lastRun = { ...anonymization.lastRun!, completedAt: done, maskedColumns };
      world.changed();
    },
    (err: unknown) => {
      if (anonymization.runs !== runs) return;
      const done = world.clock.now();
      anonymization.state = "error";
      anonymization.statusMessage = err instanceof Error ? err.message : String(err);
      anonymization.failedAt = done;
      anonymization.updatedAt = done;
      anonymization.lastRun = { ...anonymization.lastRun!, completedAt: done, maskedColumns: 0 };
      world.changed();
    },
  );
}
