// The Project's four verbs. `observe` finds the project by its adopted or recorded id, or, after a
// create whose answer was lost, by the name the create was sent with and the owner mark on its
// default branch; it names the one PATCH its plan says (plan.ts) or, once it is as declared, what
// the default endpoint's connection Secret needs. `create` records the name first; `delete`
// deletes it (only as the deletion policy says: the layer's). A project deleted outside is reported
// with how to recover it, never recreated: no change replaces a project.
import type { ProjectSpec, ProjectStatus } from "../../api/project.ts";
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  PlatformError,
  pooledHost,
  type Branch,
  type Endpoint,
  type PlatformClient,
  type PlatformProject,
} from "../../platform/index.ts";
import { endpointNamedByUri } from "../connection/named-endpoint.ts";
import { ConnectionSecrets, resetStep, type ResetReason } from "../connection/secrets.ts";
import type { PostgresConnection } from "../connection/secret-data.ts";
import { ownerAnnotation } from "../managed/installation.ts";
import type { Adapter, Answer, Observation, Pass, Verdict } from "../managed/kind.ts";
import { Refusal, invalidSpec, outside } from "../managed/refusal.ts";
import { observeMaxAge } from "../operations/looks.ts";
import { mutation } from "../operations/project.ts";
import { createSpec, plan, refusal, type Plan } from "./plan.ts";
import { sharedBy, sharingManaged, sharingStep, type SharingStep } from "./sharing.ts";

type S = ProjectStatus;

/**
 * How old the account's project list may be when a new Project looks for one its predecessor
 * kept: one list serves a whole create storm, and a project kept longer ago than this is in it.
 */
const keptListAge = 30_000;
type PjPass = Pass<ProjectSpec, S, PlatformClient>;

/** A change of the project, of who it is shared with, or its connection Secret's password reset. */
export type ProjectStep =
  Plan | SharingStep | (typeof resetStep & { change: "resetPassword"; why: ResetReason });

/** A project as found: with its default branch and endpoint when this pass looked them up. */
export interface ObservedProject {
  project: PlatformProject;
  defaultBranch?: Branch | undefined;
  defaultEndpoint?: Pick<Endpoint, "id" | "host"> | undefined;
  /**
   * The connection Secret's URI (with its password), where this pass read it to find the default
   * endpoint: the Secret's first write takes it instead of reading it again. Never logged.
   */
  connectionUri?: string | undefined;
}

export class Projects implements Adapter<ProjectSpec, S, ObservedProject, ProjectStep, PlatformClient> {
  private readonly resyncMs: number;
  private readonly secrets = new ConnectionSecrets();

  constructor(options: { resyncPeriodMs?: number | undefined }) {
    this.resyncMs = options.resyncPeriodMs ?? 600_000;
  }

  async observe(pass: PjPass): Promise<Observation<ObservedProject, S, ProjectStep>> {
    const observed = await this.find(pass);
    if (!observed) {
      // Deleted outside since it was recorded: reported with the way back, never created again.
      if (pass.status.projectId !== undefined && pass.spec.projectId === undefined && !pass.deleting) {
        throw vanished(pass.status.projectId);
      }
      return { exists: false };
    }
    const { project, defaultBranch } = observed;
    const found = {
      exists: true as const,
      object: observed,
      id: project.id,
      status: status(observed, pass),
      ready: ready(project),
      // The mark on the default branch, where this pass listed it (an adopted project).
      marks: { [ownerAnnotation]: defaultBranch?.annotations?.[ownerAnnotation] ?? "" },
    };
    if (pass.deleting) {
      this.secrets.forget(pass.obj.metadata.uid ?? "");
      return found;
    }
    const observeOnly = pass.spec.managementPolicy === "ObserveOnly";
    if (!observeOnly) {
      const refused = refusal(pass.spec, project);
      if (refused) throw invalidSpec<S>(refused, found.status);
      const next = plan(pass.spec, project);
      if (next) return { ...found, next };
      // Who it is shared with: one list of its permissions, only where the spec shares it (or did).
      if (sharingManaged(pass.spec, pass.status)) {
        const permissions = await pass.client.listProjectPermissions(project.id, { signal: pass.signal });
        const share = sharingStep(pass.spec, pass.status, permissions);
        if (share) return { ...found, next: share };
        found.status = { ...found.status, collaborators: sharedBy(pass.spec, permissions) };
      }
    }
    const target = this.target(pass, observed);
    const view = target
      ? await this.secrets.observe(pass, target, observeOnly, observed.connectionUri)
      : undefined;
    if (view && "reset" in view)
      return { ...found, next: { ...resetStep, change: "resetPassword", why: view.reset } };
    return {
      ...found,
      status: { ...found.status, ...view?.status },
      connection: { secret: view?.secret },
      lookAgainMs: view?.lookAgainMs,
    };
  }

  async create(pass: PjPass): Promise<Answer<S>> {
    const name = pass.spec.name ?? pass.mark;
    // Intent first: a create whose answer is lost (a crash, a dropped connection) is found by it.
    if (pass.status.creationName !== name) await pass.save({ creationName: name });
    try {
      const created = await pass.client.createProject(createSpec(pass.spec, name, pass.mark), {
        signal: pass.signal,
      });
      const { project, branch } = created;
      const defaultEndpoint = created.endpoints.find(
        (e) => e.branchId === branch.id && e.type === "read_write",
      );
      return {
        status: status({ project, defaultBranch: branch, defaultEndpoint }, pass),
        operations: created.operations,
        message: `created project ${project.id} in ${project.regionId} (Postgres ${project.pgVersion})`,
      };
    } catch (err) {
      throw refused(err, pass, "create");
    }
  }

  async update(pass: PjPass, step: ProjectStep, observed: ObservedProject): Promise<Answer<S>> {
    if (step.change === "grant" || step.change === "revoke") return this.share(pass, step, observed);
    if (step.change === "resetPassword") {
      const target = this.target(pass, observed);
      if (!target)
        throw new Refusal("ConnectionSecretUnknown", "transient", "the default endpoint is not known yet");
      return this.secrets.reset(pass, target, step.why);
    }
    try {
      const result = await pass.client.updateProject(observed.project.id, step.patch, mutation(pass));
      return {
        status: status({ ...observed, project: result.project }, pass),
        operations: result.operations,
      };
    } catch (err) {
      throw refused(err, pass, "update");
    }
  }

  async delete(pass: PjPass, { project }: ObservedProject): Promise<Answer<S> | "gone"> {
    try {
      await pass.client.deleteProject(project.id, mutation(pass));
    } catch (err) {
      if (err instanceof NotFoundError) return "gone";
      throw err;
    }
    const message = `deleted project ${project.id} and everything in it (recoverable on the platform for 7 days)`;
    return { operations: [], message };
  }

  /** Grants or takes back the project's sharing with one address; no operations run for it. */
  private async share(pass: PjPass, step: SharingStep, { project }: ObservedProject): Promise<Answer<S>> {
    const granted = pass.status.collaborators ?? [];
    const { signal } = pass;
    if (step.change === "grant") {
      try {
        await pass.client.grantProjectPermission(project.id, step.email, { signal });
      } catch (err) {
        // Granted meanwhile (a lost answer, the console): as wanted.
        if (!(err instanceof ConflictError)) throw err;
      }
      return {
        status: { collaborators: [...granted, step.email] },
        message: `shared the project with ${step.email}`,
      };
    }
    try {
      await pass.client.revokeProjectPermission(project.id, step.permissionId, { signal });
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
    const left = granted.filter((email) => email.toLowerCase() !== step.email.toLowerCase());
    return { status: { collaborators: left }, message: `took back the project's sharing with ${step.email}` };
  }

  /**
   * The project: by adopted or recorded id (a 404 is "not found"); else the project of the name it
   * creates whose default branch carries this resource's mark: one whose create answer was lost,
   * or one a resource of the same namespace and name kept when it was deleted (deletionPolicy
   * Orphan: a GitOps self-heal, a `kubectl delete` and `apply` again). That one is this resource's
   * again, never a second, empty project beside it.
   */
  private async find(pass: PjPass): Promise<ObservedProject | undefined> {
    const id = pass.spec.projectId ?? pass.status.projectId;
    if (id !== undefined) return this.byId(pass, id);
    if (pass.deleting) return undefined;
    const lost = pass.status.creationName !== undefined;
    const found = await this.marked(pass, pass.spec.name ?? pass.mark, lost ? 0 : keptListAge);
    if (found && !lost) {
      pass.events.normal(
        "ProjectFound",
        "Adopt",
        `project ${found.project.id} (${found.project.name}) carries this resource's owner mark: a Project of this name kept it when it was deleted; it is this resource's again, and no new project is made`,
      );
    }
    return found;
  }

  /**
   * The project by id, 404 read as not found. Its default branch and endpoint are looked up only
   * when status does not hold them yet: for an adopted project that is its adoption, when the mark
   * of whoever made it (on its default branch) is checked. The branch list is the one way to the
   * default branch and that mark; the endpoint is named by the connection Secret's URI where there
   * is a Secret to write (named-endpoint.ts), else listed. After that a look reads the project alone
   * (the account's shared list at a resync of many), so ten thousand Projects at rest cost a list
   * page per 400 of them, not two lists each.
   */
  private async byId(pass: PjPass, id: string): Promise<ObservedProject | undefined> {
    const { client, signal } = pass;
    // As the platform last showed it (its create's or a change's answer, or a read) within the
    // observe age: this operator's own changes are recorded as answered, drift made elsewhere is
    // seen within a resync period (or the resource's observe interval).
    const maxAgeMs = observeMaxAge(pass.obj, this.resyncMs);
    let project: PlatformProject;
    try {
      project = await client.projectSnapshot(id, { signal, maxAgeMs, orgId: pass.spec.orgId });
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
    const { status } = pass;
    const known = status.defaultBranchId && status.defaultEndpointId && status.projectId === id;
    if (known) return { project };
    const defaultBranch = (await client.branchSnapshot(id, { maxAgeMs })).find((b) => b.default);
    if (!defaultBranch) return { project };
    const secret = pass.deleting ? undefined : secretRole(pass.spec);
    const named =
      secret &&
      (await endpointNamedByUri(client, { projectId: id, branchId: defaultBranch.id, ...secret }, signal));
    const connectionUri = named?.uri;
    if (named?.endpoint) return { project, defaultBranch, defaultEndpoint: named.endpoint, connectionUri };
    const endpoints = await client.snapshot(id, { maxAgeMs });
    const defaultEndpoint = endpoints.find((e) => e.branchId === defaultBranch.id && e.type === "read_write");
    return { project, defaultBranch, defaultEndpoint, connectionUri };
  }

  /**
   * The project named `name` whose default branch carries this resource's mark, in the account's
   * shared list no older than `maxAgeMs` (0 after a lost create: the list must show it).
   */
  private async marked(pass: PjPass, name: string, maxAgeMs: number): Promise<ObservedProject | undefined> {
    const { client, spec, signal } = pass;
    const projects = await client.accountProjects({ orgId: spec.orgId }, { signal, maxAgeMs });
    for (const candidate of projects.filter((p) => p.name === name)) {
      const branches = await client.branchSnapshot(candidate.id, { maxAgeMs: 0 });
      if (branches.find((b) => b.default)?.annotations?.[ownerAnnotation] === pass.mark) {
        return this.byId(pass, candidate.id);
      }
    }
    return undefined;
  }

  /** The default branch's read-write endpoint's connection Secret, once both are known. */
  private target(pass: PjPass, observed: ObservedProject): PostgresConnection | undefined {
    const want = pass.spec.connectionSecret;
    const secret = secretRole(pass.spec);
    if (!want || !secret) return undefined;
    const fields = { ...pass.status, ...status(observed, pass) };
    const { defaultBranchId, defaultEndpointId, defaultEndpointHost } = fields;
    if (!defaultBranchId || !defaultEndpointId || !defaultEndpointHost) return undefined;
    return {
      name: want.name,
      field: "spec.connectionSecret.name",
      projectId: observed.project.id,
      branchId: defaultBranchId,
      endpointId: defaultEndpointId,
      host: defaultEndpointHost,
      pooledHost: pooledHost({ id: defaultEndpointId, host: defaultEndpointHost }),
      role: secret.role,
      database: secret.database,
      allowPasswordReset: want.allowPasswordReset,
    };
  }
}

/** Whom the connection Secret connects as, where there is one: the platform's own defaults, database neondb and role <database>_owner. */
function secretRole(spec: ProjectSpec): { role: string; database: string } | undefined {
  const want = spec.connectionSecret;
  if (!want) return undefined;
  const database = want.database ?? spec.defaultBranch?.databaseName ?? "neondb";
  return { role: want.role ?? spec.defaultBranch?.roleName ?? `${database}_owner`, database };
}

function status({ project, defaultBranch, defaultEndpoint }: ObservedProject, pass: PjPass): Partial<S> {
  return {
    projectId: project.id,
    name: project.name,
    regionId: project.regionId,
    pgVersion: project.pgVersion,
    orgId: project.orgId,
    proxyHost: project.proxyHost,
    historyRetentionSeconds: project.historyRetentionSeconds ?? pass.status.historyRetentionSeconds,
    ...(defaultBranch && { defaultBranchId: defaultBranch.id }),
    ...(defaultEndpoint && {
      defaultEndpointId: defaultEndpoint.id,
      defaultEndpointHost: defaultEndpoint.host,
    }),
  };
}

function ready(project: PlatformProject): Verdict {
  return ["True", "Available", `project ${project.id} is ready in ${project.regionId}`];
}

/** Deleted outside since it was recorded: reported with the way back, never created again. */
function vanished(id: string): Refusal<S> {
  return outside<S>(
    "ProjectDeleted",
    `project ${id} was deleted outside the operator; it is not created again (a Project is never replaced). ` +
      `The platform can recover it within 7 days of its deletion (POST /projects/${id}/recover, or the console); ` +
      "this resource finds it again then",
  );
}

/** The platform's refusals in the resource's terms: a plan's limit, the account's project count. */
function refused(err: unknown, pass: PjPass, step: "create" | "update"): unknown {
  if (!(err instanceof PlatformError)) return err;
  const max = /history retention[\s\S]*?max:"?(\d+)/i.exec(err.message)?.[1];
  if (err instanceof BadRequestError && max !== undefined) {
    return outside<S>(
      "RetentionAboveLimit",
      `spec.historyRetention ${pass.spec.historyRetention ?? ""} is more than the account's plan allows: ` +
        `at most ${Number(max) / 3600}h (${max} s); lower it, or change the plan (the platform said: ${err.message})`,
    );
  }
  if (step === "create" && err.code === "PROJECTS_LIMIT_EXCEEDED") {
    return outside<S>(
      "ProjectLimitReached",
      `the account may have no more projects: ${err.message}; delete one, or change the plan (tried again every minute)`,
    );
  }
  return err;
}
