// The Project adapter: the platform verbs of a project and its plan (plan.ts). It finds the
// project by its adopted or recorded id, or, after a create whose answer was lost, by the name the
// create was sent with and the owner mark on its default branch; creates it (the name recorded
// first); sends the one PATCH plan names; deletes it only as the deletion policy says. A project
// deleted outside is reported with how to recover it, never recreated: no change replaces a project.
import type { ProjectSpec, ProjectStatus } from "../../api/project.ts";
import {
  BadRequestError,
  NotFoundError,
  PlatformError,
  pooledHost,
  type Branch,
  type Endpoint,
  type PlatformProject,
} from "../../platform/index.ts";
import { Delay, Problem, invalidSpec } from "../managed/errors.ts";
import { observeInterval, observeMaxAge } from "../managed/polling.ts";
import type { Adapter, Answer, ConnectionDetails, Pass, Verdict } from "../managed/types.ts";
import { createSpec, ownerAnnotation, plan, refusal, type Plan } from "./plan.ts";

type S = ProjectStatus;
type PjPass = Pass<ProjectSpec, S>;

/** A project as found: with its default branch and endpoint when this pass listed them. */
export interface ObservedProject {
  project: PlatformProject;
  defaultBranch?: Branch | undefined;
  defaultEndpoint?: Endpoint | undefined;
}

export class Projects implements Adapter<ProjectSpec, S, ObservedProject, Plan> {
  private readonly resyncMs: number;

  constructor(options: { resyncPeriodMs?: number | undefined }) {
    this.resyncMs = options.resyncPeriodMs ?? 600_000;
  }

  /**
   * The project: by adopted or recorded id (a 404 is "not found": the layer tells an adopted id
   * missing from a recorded project deleted outside); else, when a create was sent and its answer
   * lost, the project of that name whose default branch carries this resource's mark. A resource
   * that never sent a create finds nothing without asking.
   */
  async find(pass: PjPass): Promise<ObservedProject | undefined> {
    const id = pass.spec.projectId ?? pass.status.projectId;
    if (id !== undefined) return this.observe(pass, id);
    const name = pass.status.creationName;
    return name === undefined ? undefined : this.lostCreate(pass, name);
  }

  readonly id = (observed: ObservedProject) => observed.project.id;
  /** The mark on the default branch, where this pass listed it (an adopted project). */
  readonly markOf = (observed: ObservedProject) => observed.defaultBranch?.annotations?.[ownerAnnotation];

  plan(pass: PjPass, { project }: ObservedProject): Plan | undefined {
    if (pass.deleting) return undefined;
    const refused = refusal(pass.spec, project);
    if (refused) throw invalidSpec<S>(refused, this.status({ project }));
    return plan(pass.spec, project);
  }

  async create(pass: PjPass): Promise<Answer<ObservedProject, S>> {
    const name = pass.spec.name ?? pass.mark;
    // Intent first: a create whose answer is lost (a crash, a dropped connection) is found by it.
    if (pass.status.creationName !== name) await pass.save({ creationName: name });
    const created = await pass.client.createProject(createSpec(pass.spec, name, pass.mark), {
      signal: pass.signal,
    });
    const { project, branch } = created;
    return {
      object: {
        project,
        defaultBranch: branch,
        defaultEndpoint: created.endpoints.find((e) => e.branchId === branch.id && e.type === "read_write"),
      },
      operations: created.operations,
      message: `created project ${project.id} in ${project.regionId} (Postgres ${project.pgVersion})`,
    };
  }

  async apply(pass: PjPass, step: Plan, observed: ObservedProject): Promise<Answer<ObservedProject, S>> {
    const result = await pass.client.updateProject(observed.project.id, step.patch, pass.mutation());
    return { object: { ...observed, project: result.project }, operations: result.operations };
  }

  async delete(pass: PjPass, { project }: ObservedProject): Promise<Answer<ObservedProject, S> | "gone"> {
    try {
      await pass.client.deleteProject(project.id, pass.mutation());
    } catch (err) {
      if (err instanceof NotFoundError) return "gone";
      throw err;
    }
    const message = `deleted project ${project.id} and everything in it (recoverable on the platform for 7 days)`;
    return { operations: [], message };
  }

  status({ project, defaultBranch, defaultEndpoint }: ObservedProject, pass?: PjPass): Partial<S> {
    return {
      projectId: project.id,
      name: project.name,
      regionId: project.regionId,
      pgVersion: project.pgVersion,
      orgId: project.orgId,
      proxyHost: project.proxyHost,
      historyRetentionSeconds: project.historyRetentionSeconds ?? pass?.status.historyRetentionSeconds,
      ...(defaultBranch && { defaultBranchId: defaultBranch.id }),
      ...(defaultEndpoint && {
        defaultEndpointId: defaultEndpoint.id,
        defaultEndpointHost: defaultEndpoint.host,
      }),
    };
  }

  ready({ project }: ObservedProject): Verdict {
    return ["True", "Available", `project ${project.id} is ready in ${project.regionId}`];
  }

  /** Deleted outside since it was recorded: reported with the way back, never created again. */
  vanished(pass: PjPass): Problem<S> {
    const id = pass.status.projectId ?? "";
    return new Problem<S>(
      "ProjectDeleted",
      `project ${id} was deleted outside the operator; it is not created again (a Project is never replaced). ` +
        `The platform can recover it within 7 days of its deletion (POST /projects/${id}/recover, or the console); ` +
        "this resource finds it again then",
      { retry: { after: Delay.notFound }, stalled: true },
    );
  }

  /** The platform's refusals in the resource's terms: a plan's limit, the account's project count. */
  explain(err: unknown, pass: PjPass, step: Plan | "create" | "delete"): unknown {
    if (step === "delete" || !(err instanceof PlatformError)) return err;
    const max = /history retention[\s\S]*?max:"?(\d+)/i.exec(err.message)?.[1];
    if (err instanceof BadRequestError && max !== undefined) {
      return new Problem<S>(
        "RetentionAboveLimit",
        `spec.historyRetention ${pass.spec.historyRetention ?? ""} is more than the account's plan allows: ` +
          `at most ${Number(max) / 3600}h (${max} s); lower it, or change the plan (the platform said: ${err.message})`,
        { retry: "onChange" },
      );
    }
    if (step === "create" && err.code === "PROJECTS_LIMIT_EXCEEDED") {
      return new Problem<S>(
        "ProjectLimitReached",
        `the account may have no more projects: ${err.message}; delete one, or change the plan`,
        { retry: { after: Delay.userAction }, stalled: true },
      );
    }
    return err;
  }

  observeAfterMs(pass: PjPass): number | undefined {
    return observeInterval(pass.obj);
  }

  /** The default branch's read-write endpoint's connection Secret, once both are known. */
  connection(pass: PjPass, observed: ObservedProject): ConnectionDetails | undefined {
    const want = pass.spec.connectionSecret;
    if (!want) return undefined;
    const fields = { ...pass.status, ...this.status(observed) };
    const { defaultBranchId, defaultEndpointId, defaultEndpointHost } = fields;
    if (!defaultBranchId || !defaultEndpointId || !defaultEndpointHost) return undefined;
    // The platform's own defaults: database neondb, role <database>_owner.
    const database = want.database ?? pass.spec.defaultBranch?.databaseName ?? "neondb";
    return {
      secret: {
        name: want.name,
        projectId: observed.project.id,
        branchId: defaultBranchId,
        endpointId: defaultEndpointId,
        host: defaultEndpointHost,
        pooledHost: pooledHost({ id: defaultEndpointId, host: defaultEndpointHost }),
        role: want.role ?? pass.spec.defaultBranch?.roleName ?? `${database}_owner`,
        database,
        allowPasswordReset: want.allowPasswordReset,
      },
    };
  }

  /**
   * The project by id, 404 read as not found. Its default branch and endpoint are listed (in the
   * project's shared lists) only when status does not hold them, or for an adopted project, whose
   * default branch carries the mark of whoever made it.
   */
  private async observe(pass: PjPass, id: string): Promise<ObservedProject | undefined> {
    const { client, signal } = pass;
    // As the platform last showed it (its create's or a change's answer, or a read) within the
    // observe age: this operator's own changes are recorded as answered, drift made elsewhere is
    // seen within a resync period (or the resource's observe interval).
    const maxAgeMs = observeMaxAge(pass.obj, this.resyncMs);
    let project: PlatformProject;
    try {
      project = await client.projectSnapshot(id, { signal, maxAgeMs });
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
    const { status } = pass;
    const known = status.defaultBranchId && status.defaultEndpointId && status.projectId === id;
    if (known && pass.spec.projectId === undefined) return { project };
    const defaultBranch = (await client.branchSnapshot(id, { maxAgeMs })).find((b) => b.default);
    const endpoints = defaultBranch ? await client.snapshot(id, { maxAgeMs }) : [];
    const defaultEndpoint = endpoints.find(
      (e) => e.branchId === defaultBranch?.id && e.type === "read_write",
    );
    return { project, defaultBranch, defaultEndpoint };
  }

  /** After a lost create: the project of that name whose default branch carries this resource's mark. */
  private async lostCreate(pass: PjPass, name: string): Promise<ObservedProject | undefined> {
    const { client, spec, signal } = pass;
    const named = await client.listProjects({ search: name, orgId: spec.orgId }, { signal });
    for (const candidate of named.filter((p) => p.name === name)) {
      const branches = await client.branchSnapshot(candidate.id, { maxAgeMs: 0 });
      if (branches.find((b) => b.default)?.annotations?.[ownerAnnotation] === pass.mark) {
        return this.observe(pass, candidate.id);
      }
    }
    return undefined;
  }
}
