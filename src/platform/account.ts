/**
 * A platform account, as the operator meets it through its API keys. The platform keeps its rate
 * limit per account and its change lock per project (platform-facts.md, "Errors and limits"), so
 * the account owns what every key of it shares: the request budget, the operation durations it
 * learned, and its projects (project.ts), each with its mutation gate, lists and operations. The
 * clients of its keys (client.ts) send the requests, each with its own key.
 *
 * Which keys share an account is found out by accounts.ts (`GET /auth`); a client made on its own
 * is an account of its own key.
 */
import { RateBudget, type RateLimits } from "./budget.ts";
import type { PlatformClient } from "./client.ts";
import { OperationDurations } from "./durations.ts";
import { GuessedEnds } from "./gate.ts";
import { LockBelief } from "./operations.ts";
import { Project, type ProjectOptions } from "./project.ts";
import { ProjectList } from "./project-list.ts";

export interface AccountOptions extends ProjectOptions {
  /** The account's budget. Default: a new one with `limits`. */
  budget?: RateBudget;
  /** Limits of the default budget; ignored when `budget` is given. */
  limits?: Partial<RateLimits>;
}

export class Account {
  /** The platform's id of the account (`GET /auth`); undefined while its key was not asked. */
  id: string | undefined;
  readonly budget: RateBudget;
  /** How long operations take: the platform's, the same for every project of the account. */
  readonly durations = new OperationDurations();
  /** Its projects' gates confirm guessed ends one at a time; what the platform's lock proves. */
  readonly guesses = new GuessedEnds();
  readonly lock = new LockBelief();
  /** Its projects, as one list shared by every key and reader (project-list.ts). */
  readonly projectList = new ProjectList();
  readonly options: ProjectOptions;
  private readonly projects = new Map<string, Project>();
  private readonly keys = new Set<PlatformClient>();

  constructor(options: AccountOptions = {}) {
    this.budget = options.budget ?? new RateBudget(options.limits);
    this.options = {
      snapshotWindowMs: options.snapshotWindowMs,
      operations: options.operations,
      operationPolling: options.operationPolling,
      mutationGate: options.mutationGate,
    };
  }

  /** The account's project of that id, shared by the clients of all its keys. */
  project(id: string): Project {
    let project = this.projects.get(id);
    if (!project) {
      project = new Project(id, this);
      this.projects.set(id, project);
    }
    return project;
  }

  /** Forgets what its projects hold that no reader would take any more (their stale lists). */
  forgetStaleLists(): void {
    for (const project of this.projects.values()) project.forgetStaleLists();
  }

  /** The clients of the account's keys, one per key. */
  get clients(): ReadonlySet<PlatformClient> {
    return this.keys;
  }

  /** A client of one of the account's keys (client.ts calls these as it joins and leaves). */
  add(client: PlatformClient): void {
    this.keys.add(client);
  }

  remove(client: PlatformClient): void {
    this.keys.delete(client);
  }
}
