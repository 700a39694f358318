// A Branch's plan, pure so its rules are tested apart from any I/O: the name and expiry a branch is
// created with, what status shows, what a vanished branch means, and the one change a present
// branch needs next. Only what the spec states is managed; nothing is deleted.
import type { BranchSpec, BranchStatus } from "../../api/branch.ts";
import { restoredFromParentAtAnnotation as resetAnnotation } from "../../api/group.ts";
import type { Branch, BranchPatch } from "../../platform/index.ts";
import { parseDuration } from "../../runtime/index.ts";
import type { Step } from "../managed/kind.ts";
import { Refusal, invalidSpec } from "../managed/refusal.ts";

type Change =
  | { change: "restore"; restoredFromParentAt: string; parentId: string }
  | { change: "update"; patch: BranchPatch }
  | { change: "createRole"; name: string }
  | { change: "createDatabase"; name: string; owner: string };
export type BranchStep = Step & Change;
/** What the plan reads of a pass. */
interface BrPass {
  spec: BranchSpec;
  status: BranchStatus;
  obj: { metadata: { annotations?: Record<string, string> | undefined } };
  deleting: boolean;
  mark: string;
  now(): Date;
}

/** Each change's event action and condition reason. */
const words: Record<Change["change"], [action: string, reason: string]> = {
  restore: ["Restore", "Restoring"],
  update: ["Update", "Updating"],
  createRole: ["CreateRole", "CreatingRole"],
  createDatabase: ["CreateDatabase", "CreatingDatabase"],
};

function step(change: Change, message: string): BranchStep {
  const [action, reason] = words[change.change];
  return { ...change, action, reason, message };
}

/** The next step, or why the spec cannot be done as it stands (words naming the field or annotation). */
type Next = BranchStep | { problem: string };

/** The roles and databases a branch has: as listed this pass, or as its status last showed them. */
export type BranchContent = Required<Pick<BranchStatus, "roles" | "databases">>;

/** A branch as found, with its roles and databases when this pass listed them. */
export type ObservedBranch = Branch & { content?: BranchContent | undefined };

/**
 * The spec's name, else the owner mark (known before the create, so a lost answer's branch is found
 * again); none for an adopted branch the spec does not rename.
 */
export function desiredName(spec: BranchSpec, mark: string): string | undefined {
  return spec.name ?? (spec.branchId ? undefined : mark);
}

/** A branch clients can query: ready, or archived (slower, still served). */
export function usable(branch: Branch): boolean {
  return branch.currentState === "ready" || branch.currentState === "archived";
}

/** Past the expiry: the platform deletes the branch then. */
export function expired(expiresAt: string | undefined, now: Date): boolean {
  return expiresAt !== undefined && Date.parse(expiresAt) <= now.getTime();
}

/** The create's expiry: `expiresAt`, or now + `ttl` in whole seconds (computed once; then the branch's). */
export function creationExpiry(spec: BranchSpec, now: Date): string | undefined {
  if (spec.expiresAt !== undefined || spec.ttl === undefined) return spec.expiresAt;
  const ms = parseDuration(spec.ttl);
  if (ms === undefined) throw invalidSpec(`spec.ttl: "${spec.ttl}" is not a duration`);
  return new Date(Math.ceil((now.getTime() + ms) / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** The expiry in the future, or the words that say why not (the API server has no clock rule). */
export function expiryProblem(expiresAt: string | undefined, now: Date): string | undefined {
  if (expiresAt !== undefined && Number.isNaN(Date.parse(expiresAt)))
    return `spec.expiresAt: "${expiresAt}" is not an RFC 3339 timestamp`;
  return expired(expiresAt, now) ? `spec.expiresAt: ${expiresAt} is not in the future` : undefined;
}

/**
 * The PATCH that brings the branch to the spec, or undefined when it matches. No `protected` leaves
 * protection as it is; no `expiresAt` or `ttl` leaves the expiry; a `ttl` sets an expiry only on a
 * branch that has none (an adopted one).
 */
export function plan(spec: BranchSpec, branch: Branch, mark: string, now: Date): BranchPatch | undefined {
  const patch: BranchPatch = {};
  const name = desiredName(spec, mark);
  if (name !== undefined && branch.name !== name) patch.name = name;
  if (spec.protected !== undefined && branch.protected !== spec.protected) patch.protected = spec.protected;
  if (spec.expiresAt !== undefined) {
    const current = branch.expiresAt === undefined ? undefined : Date.parse(branch.expiresAt);
    if (current !== Date.parse(spec.expiresAt)) patch.expiresAt = spec.expiresAt;
  } else if (spec.ttl !== undefined && branch.expiresAt === undefined) {
    patch.expiresAt = creationExpiry(spec, now);
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/**
 * The next change, in the order that lets each succeed: a reset from the parent first (it replaces
 * the branch's data, roles and databases included), then the branch's own fields, then missing
 * roles, then missing databases (their owners must exist). While the resource is being deleted,
 * only the unprotect the deletion needs. A refusal of the spec as it stands still shows the branch.
 */
export function nextStep(pass: BrPass, branch: ObservedBranch): BranchStep | undefined {
  const { spec, obj } = pass;
  const update = (patch: BranchPatch) =>
    step({ change: "update", patch }, `updating ${Object.keys(patch).join(", ")} of branch ${branch.id}`);
  const refused = (reason: string, next: Next | undefined) => {
    if (!next || !("problem" in next)) return next;
    throw new Refusal(reason, "spec", next.problem, { status: branchStatus(branch, pass) });
  };
  if (pass.deleting)
    return spec.protected === false && branch.protected ? update({ protected: false }) : undefined;
  const asked = obj.metadata.annotations?.[resetAnnotation];
  const restore = usable(branch) ? restoreRequested(asked, pass.status) : undefined;
  if (restore !== undefined) return refused("RestoreRefused", restoreStep(branch, restore));
  const patch = plan(spec, branch, pass.mark, pass.now());
  const late = patch?.expiresAt ? expiryProblem(patch.expiresAt, pass.now()) : undefined; // the platform refuses it
  if (patch) return late ? refused("InvalidSpec", { problem: late }) : update(patch);
  return branch.content && refused("InvalidSpec", contentStep(spec, branch.content, branch.id));
}

/** The branch's fields (those status has a place for), and the roles and databases of the spec it has. */
export function branchStatus(b: ObservedBranch, { spec }: { spec: BranchSpec }): Partial<BranchStatus> {
  const { id, content, projectId: _p, stateChangedAt: _s, initSource: _i, annotations: _a, ...shown } = b;
  return { branchId: id, ...shown, ...(content ? contentStatus(spec, content) : {}) };
}

/**
 * Why a branch this resource had is gone: the platform's expiry, or a deletion elsewhere. Never
 * recreated: a new branch would not hold the data that is gone, and would hide the loss.
 */
export function vanished(status: BranchStatus, now: Date): Refusal<BranchStatus> {
  const [reason, what] = expired(status.expiresAt, now)
    ? ["Expired", `expired at ${status.expiresAt} and the platform deleted it`]
    : ["BranchDeleted", "was deleted outside the operator"];
  const message = `branch ${status.branchId ?? "(unknown)"} ${what}; it is not recreated, its data is gone`;
  return new Refusal(reason, "spec", `${message} (delete this resource, or re-create it for a new branch)`, {
    status: { currentState: "deleted", pendingState: undefined, operations: undefined },
  });
}

/** The annotation's value when it asks for a reset not acted upon yet. */
export function restoreRequested(annotation: string | undefined, status: BranchStatus): string | undefined {
  return annotation !== undefined && annotation !== status.restoredFromParentAt ? annotation : undefined;
}

/** The reset from the parent the annotation asks for, or why it cannot be done (no parent). */
export function restoreStep(branch: Pick<Branch, "id" | "parentId">, value: string): Next {
  const { id, parentId } = branch;
  const asked = `${resetAnnotation}=${value}`;
  if (parentId === undefined) {
    const why = `branch ${id} has no parent (it is the project's root branch), so there is nothing to reset it from`;
    return { problem: `${asked}: ${why}; remove the annotation` };
  }
  const message = `resetting branch ${id} from its parent ${parentId} (${asked})`;
  return step({ change: "restore", restoredFromParentAt: value, parentId }, message);
}

/** The first role, and the first database (with its index), the spec names that the branch lacks. */
function missing(spec: BranchSpec, has: BranchContent) {
  const role = spec.roles?.find((r) => !has.roles.includes(r.name))?.name;
  const i = (spec.databases ?? []).findIndex((d) => !has.databases.some((x) => x.name === d.name));
  return { role, i, db: spec.databases?.[i] };
}

/**
 * Whether roles and databases must be listed this pass (two GETs, not on every poll): the spec names
 * some the status does not show, or a new generation (so one deleted elsewhere is noticed then).
 */
export function contentUnknown(spec: BranchSpec, status: BranchStatus, generation?: number): boolean {
  if (!spec.roles?.length && !spec.databases?.length) return false;
  if (status.observedGeneration !== generation) return true;
  const { role, db } = missing(spec, { roles: status.roles ?? [], databases: status.databases ?? [] });
  return role !== undefined || db !== undefined;
}

/** What the status shows of the roles and databases the spec names: those the branch has. */
export function contentStatus(spec: BranchSpec, has: BranchContent): BranchContent {
  return {
    roles: (spec.roles ?? []).map((r) => r.name).filter((name) => has.roles.includes(name)),
    databases: has.databases.filter((d) => spec.databases?.some((wanted) => wanted.name === d.name)),
  };
}

/**
 * The first missing role, else the first missing database whose owner exists. A database whose
 * owner is neither on the branch nor in spec.roles is an error naming the field (the API server
 * cannot check it: the branch's roles come from its parent too).
 */
export function contentStep(spec: BranchSpec, has: BranchContent, id: string): Next | undefined {
  const { role, i, db } = missing(spec, has);
  if (role !== undefined)
    return step({ change: "createRole", name: role }, `creating role ${role} on branch ${id}`);
  if (db === undefined) return undefined;
  const { name, owner } = db;
  const problem = `spec.databases[${i}].owner: role ${owner} is neither in spec.roles nor on branch ${id}`;
  if (!has.roles.includes(owner)) return { problem };
  const message = `creating database ${name} owned by ${owner} on branch ${id}`;
  return step({ change: "createDatabase", name, owner }, message);
}
