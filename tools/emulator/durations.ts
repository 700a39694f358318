// How long each operation runs: the configured duration (overall or per
// action), varied by a uniform jitter from a seeded source, and a record per
// project of what was drawn, so a benchmark can compute the serial floor its
// run really had. The record is aggregated (counts and sums per action), so
// its memory stays flat however many operations run.
import type { OperationAction } from "./model.ts";

export interface DurationSettings {
  /** Emulated duration of an operation's running phase, overall or per action (default 1000 ms). */
  operationDurationMs?: number | Partial<Record<OperationAction, number>>;
  /** Each run lasts its duration × (1 ± jitter), drawn uniformly (0..1, default 0: exact). */
  operationDurationJitter?: number;
}

export interface ActionDurations {
  /** Running phases drawn (a retried operation runs more than once). */
  runs: number;
  drawn_ms: number;
  min_ms: number;
  max_ms: number;
}

export interface ProjectDurations {
  /** Over every action but check_availability, which never holds a lock. */
  runs: number;
  drawn_ms: number;
  /** Time failed operations waited for the platform's retry (they hold the lock meanwhile). */
  retry_wait_ms: number;
  by_action: Partial<Record<OperationAction, ActionDurations>>;
}

export const defaultOperationDurationMs = 1000;

export class OperationDurations {
  private readonly configured: number | Partial<Record<OperationAction, number>>;
  readonly jitter: number;
  private readonly random: () => number;
  private readonly projects = new Map<string, ProjectDurations>();

  constructor(settings: DurationSettings, random: () => number) {
    this.configured = settings.operationDurationMs ?? defaultOperationDurationMs;
    this.jitter = settings.operationDurationJitter ?? 0;
    if (!(this.jitter >= 0 && this.jitter <= 1)) {
      throw new RangeError(`operationDurationJitter must be between 0 and 1, got ${this.jitter}`);
    }
    this.random = random;
  }

  /** The configured (mean) duration of an action. */
  configuredMs(action: OperationAction): number {
    return typeof this.configured === "number"
      ? this.configured
      : (this.configured[action] ?? defaultOperationDurationMs);
  }

  /** Draws the length of one running phase of `action` in `projectId`, and records it. */
  draw(projectId: string, action: OperationAction): number {
    const base = this.configuredMs(action);
    const ms = this.jitter === 0 ? base : Math.round(base * (1 + this.jitter * (2 * this.random() - 1)));
    const project = this.project(projectId);
    const entry = (project.by_action[action] ??= { runs: 0, drawn_ms: 0, min_ms: ms, max_ms: ms });
    entry.runs++;
    entry.drawn_ms += ms;
    entry.min_ms = Math.min(entry.min_ms, ms);
    entry.max_ms = Math.max(entry.max_ms, ms);
    if (action !== "check_availability") {
      project.runs++;
      project.drawn_ms += ms;
    }
    return ms;
  }

  recordRetryWait(projectId: string, ms: number): void {
    this.project(projectId).retry_wait_ms += ms;
  }

  /** Every project's record, by project id. */
  record(): Record<string, ProjectDurations> {
    return structuredClone(Object.fromEntries(this.projects));
  }

  private project(projectId: string): ProjectDurations {
    let project = this.projects.get(projectId);
    if (!project) {
      project = { runs: 0, drawn_ms: 0, retry_wait_ms: 0, by_action: {} };
      this.projects.set(projectId, project);
    }
    return project;
  }
}
