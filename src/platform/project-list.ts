/**
 * The account's projects as one list (`GET /projects`, every page), shared by every key of the
 * account and every reader: listed at most once per `maxAgeMs` a reader accepts (single-flight),
 * and kept current by this operator's own creates and deletes, so a create storm lists the account
 * once, not once per project. One list per organization the readers name (a key of a user in an
 * organization names it to see that organization's projects).
 */
import { keyRefused } from "./errors.ts";
import type { Project } from "./project-schemas.ts";

interface Entry {
  startedAt: number;
  projects: Promise<readonly Project[]>;
  sentBy: unknown;
  /** This operator's own creates and deletes since the list was sent, applied to its answer. */
  created: Map<string, Project>;
  deleted: Set<string>;
}

/** Projects a page of the list holds (the most the platform gives). */
export const projectsPerPage = 400;

export class ProjectList {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;
  /** When each project was last asked about one by one (`worthListing`), and how many the list held. */
  private readonly asked = new Map<string, number>();
  private listed = 0;

  constructor(now: () => number = () => performance.now()) {
    this.now = now;
  }

  /** The projects of `orgId` (none: the key's own) from a list no older than `maxAgeMs`. */
  get(
    orgId: string | undefined,
    list: () => Promise<readonly Project[]>,
    reader: unknown,
    maxAgeMs: number,
  ): Promise<readonly Project[]> {
    const key = orgId ?? "";
    const entry = this.entries.get(key);
    if (entry && this.now() - entry.startedAt < maxAgeMs) {
      // Another key's refusal (revoked, say) is that key's: this reader lists with its own.
      const shown = entry.projects.then((projects) => current(entry, projects));
      return entry.sentBy === reader
        ? shown
        : shown.catch((err: unknown) => {
            if (keyRefused(err)) return list();
            throw err;
          });
    }
    const fresh: Entry = {
      startedAt: this.now(),
      projects: list(),
      sentBy: reader,
      created: new Map(),
      deleted: new Set(),
    };
    this.entries.set(key, fresh);
    fresh.projects.then(
      (projects) => (this.listed = projects.length),
      // A failure is shared with those already waiting, but not kept for later readers.
      () => {
        if (this.entries.get(key) === fresh) this.entries.delete(key);
      },
    );
    return fresh.projects.then((projects) => current(fresh, projects));
  }

  /**
   * Whether one list of the account is cheaper than reading `projectId` alone: as many projects as
   * the list has pages were asked about within `windowMs` (a steady state of thousands of Projects
   * costs a request per 400 of them; one Project in a large account reads its own).
   */
  worthListing(projectId: string, windowMs: number): boolean {
    const now = this.now();
    this.asked.set(projectId, now);
    if (this.asked.size > 2 * Math.max(this.listed, projectsPerPage)) {
      for (const [id, at] of this.asked) if (now - at >= windowMs) this.asked.delete(id);
    }
    let recent = 0;
    for (const at of this.asked.values()) if (now - at < windowMs) recent++;
    return recent >= Math.max(1, Math.ceil(this.listed / projectsPerPage));
  }

  /** This operator created `project`: every list that may show it shows it. */
  created(project: Project): void {
    for (const [key, entry] of this.entries) {
      if (key !== "" && key !== project.orgId) continue;
      entry.created.set(project.id, project);
      entry.deleted.delete(project.id);
    }
  }

  /** This operator deleted the project: no list shows it. */
  deleted(projectId: string): void {
    for (const entry of this.entries.values()) {
      entry.created.delete(projectId);
      entry.deleted.add(projectId);
    }
  }
}

/** A list's answer with this operator's own creates and deletes since it was sent. */
function current(entry: Entry, listed: readonly Project[]): readonly Project[] {
  if (entry.created.size === 0 && entry.deleted.size === 0) return listed;
  const kept = listed.filter((p) => !entry.deleted.has(p.id) && !entry.created.has(p.id));
  return [...kept, ...entry.created.values()];
}
