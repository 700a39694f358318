// Who a project is shared with, as its Project declares it (spec.collaborators): the one grant or
// revoke due next, decided from the spec, what this resource granted before (status), and the
// project's permissions as the platform lists them. Pure: table-tested in sharing.test.ts.
import type { ProjectSpec, ProjectStatus } from "../../api/project.ts";
import type { ProjectPermission } from "../../platform/index.ts";
import type { Step } from "../managed/kind.ts";

export type SharingStep = Step &
  ({ change: "grant"; email: string } | { change: "revoke"; email: string; permissionId: string });

const key = (email: string) => email.toLowerCase();

/** Whether the project's permissions must be read this pass (the spec shares it, or did). */
export function sharingManaged(spec: ProjectSpec, status: ProjectStatus): boolean {
  return spec.collaborators !== undefined || (status.collaborators?.length ?? 0) > 0;
}

/**
 * The next grant or revoke: an address the spec names that the project is not shared with, then a
 * grant to take back (one this resource made and the spec dropped; with `exclusive`, any the spec
 * does not name). Undefined: as declared.
 */
export function sharingStep(
  spec: ProjectSpec,
  status: ProjectStatus,
  listed: readonly ProjectPermission[],
): SharingStep | undefined {
  const live = listed.filter((p) => p.revokedAt === undefined);
  const wanted = new Set((spec.collaborators?.emails ?? []).map(key));
  const shared = new Set(live.map((p) => key(p.grantedToEmail)));
  const missing = [...(spec.collaborators?.emails ?? [])].find((email) => !shared.has(key(email)));
  if (missing !== undefined) {
    return {
      action: "Share",
      reason: "Sharing",
      message: `sharing the project with ${missing}`,
      change: "grant",
      email: missing,
    };
  }
  const granted = new Set((status.collaborators ?? []).map(key));
  const exclusive = spec.collaborators?.exclusive === true;
  const extra = live.find(
    (p) => !wanted.has(key(p.grantedToEmail)) && (exclusive || granted.has(key(p.grantedToEmail))),
  );
  if (extra === undefined) return undefined;
  return {
    action: "Unshare",
    reason: "Unsharing",
    message: `taking back the project's sharing with ${extra.grantedToEmail}`,
    change: "revoke",
    email: extra.grantedToEmail,
    permissionId: extra.id,
  };
}

/** What status records: the addresses this resource shares the project with now. */
export function sharedBy(spec: ProjectSpec, listed: readonly ProjectPermission[]): string[] | undefined {
  if (spec.collaborators === undefined) return undefined;
  const live = new Set(listed.filter((p) => p.revokedAt === undefined).map((p) => key(p.grantedToEmail)));
  return spec.collaborators.emails.filter((email) => live.has(key(email)));
}
