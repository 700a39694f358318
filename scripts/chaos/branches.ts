// Branch resources under kill -9: each create is interrupted at a random moment
// (before the platform call, while it runs, before its status write), the
// operator restarted, and in the end every Branch must own exactly one branch on
// the platform (found again by its name, its owner mark, never created twice), and
// none may remain once the resources are deleted.
import { branchResourceKind } from "../../src/controllers/branch/index.ts";
import { ownerMark } from "../../src/controllers/managed/installation.ts";
import { chaosInstallationId } from "./operators.ts";
import type { KubeClient, KubeObject } from "../../src/runtime/index.ts";
import type { InvariantResult } from "./invariants.ts";
import type { ChaosPlatform } from "./platform.ts";
import type { Random } from "./random.ts";
import { persist } from "./workload.ts";

interface BranchObject extends KubeObject {
  status?: { branchId?: string; conditions?: { type: string; status: string; reason?: string }[] };
}

export class BranchFlows {
  /** Branch resources made so far, by name, with the name their branch gets (their owner mark). */
  readonly made = new Map<string, string>();
  private serial = 0;
  private readonly kube: KubeClient;
  private readonly random: Random;
  private readonly namespace: string;
  private readonly projects: string[];

  constructor(kube: KubeClient, random: Random, namespace: string, projects: string[]) {
    this.kube = kube;
    this.random = random;
    this.namespace = namespace;
    this.projects = projects;
  }

  /** A Branch resource from the project's default branch; returns at once. */
  async create(): Promise<void> {
    const name = `branch-${++this.serial}`;
    await persist(`create ${name}`, () =>
      this.kube.create<BranchObject>(branchResourceKind, {
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "Branch",
        metadata: { name, namespace: this.namespace },
        spec: { projectId: this.random.pick(this.projects) },
      } as BranchObject),
    );
    this.made.set(name, ownerMark(chaosInstallationId, "Branch", this.namespace, name));
  }

  /** Why each Branch is not yet Ready with its branch id; empty when all are. */
  async lag(): Promise<string[]> {
    const list = await persist("list branches", () =>
      this.kube.list<BranchObject>(branchResourceKind, { namespace: this.namespace }),
    );
    const lag: string[] = [];
    for (const name of this.made.keys()) {
      const obj = list.items.find((o) => o.metadata.name === name);
      const ready = obj?.status?.conditions?.find((c) => c.type === "Ready");
      if (!obj) lag.push(`${name}: missing`);
      else if (ready?.status !== "True" || !obj.status?.branchId)
        lag.push(`${name}: not Ready (${ready?.reason ?? "no Ready condition"})`);
    }
    return lag;
  }

  /** Waits (bounded) until every Branch is Ready, then checks each owns exactly one platform branch. */
  async check(platform: ChaosPlatform, timeoutMs: number): Promise<InvariantResult> {
    const deadline = Date.now() + timeoutMs;
    let lag = await this.lag();
    while (lag.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      lag = await this.lag();
    }
    const branches = await platform.platformBranches();
    const problems = [...lag];
    let exactlyOne = 0;
    for (const [name, mark] of this.made) {
      const found = branches.filter((b) => b.name === mark);
      if (found.length === 1) exactlyOne++;
      else problems.push(`${name}: ${found.length} platform branches named ${mark}`);
    }
    return {
      name: "kill -9 mid branch-create: each Branch owns exactly one platform branch",
      pass: problems.length === 0 && this.made.size > 0,
      counts: `${exactlyOne}/${this.made.size} Branches with exactly one platform branch, ${lag.length} not Ready`,
      problems: this.made.size > 0 ? problems : ["no Branch was created"],
    };
  }

  /** Deletes every Branch and waits (bounded) until they and their platform branches are gone. */
  async deleteAll(platform: ChaosPlatform, timeoutMs: number): Promise<InvariantResult> {
    for (const name of this.made.keys()) {
      await persist(`delete ${name}`, () => this.kube.delete(branchResourceKind, this.namespace, name));
    }
    const deadline = Date.now() + timeoutMs;
    let left: string[];
    for (;;) {
      const list = await persist("list branches", () =>
        this.kube.list<BranchObject>(branchResourceKind, { namespace: this.namespace }),
      );
      const names = new Set((await platform.platformBranches()).map((b) => b.name));
      left = [
        ...list.items.map((o) => `${o.metadata.name ?? ""}: resource still there`),
        ...[...this.made]
          .filter(([, mark]) => names.has(mark))
          .map(([n]) => `${n}: platform branch still there`),
      ];
      if (left.length === 0 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    return {
      name: "deleted Branches leave no platform branch",
      pass: left.length === 0,
      counts: `${this.made.size} Branches deleted, ${left.length} left`,
      problems: left,
    };
  }
}
