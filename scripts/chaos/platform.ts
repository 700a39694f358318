// The platform side of a campaign: the emulator in this process (it outlives
// every operator), its fault switch, and the reads the invariants need, made
// with the bootstrap key over the real HTTP API.
import { readFile } from "node:fs/promises";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import type { FaultsConfig } from "../../tools/emulator/faults.ts";
import type { RequestLogEntry } from "../../tools/emulator/request-log.ts";
import type { Random } from "./random.ts";

export interface PlatformEndpoint {
  id: string;
  name?: string;
  project_id: string;
  branch_id: string;
  type: string;
  autoscaling_limit_min_cu: number;
  autoscaling_limit_max_cu: number;
}

export interface PlatformBranch {
  id: string;
  name: string;
  project_id: string;
}

export interface PlatformKey {
  id: number;
  name: string;
}

export interface ChaosPlatform {
  emulator: Emulator;
  projects: string[];
  /** Branch ids of each project that start without an endpoint. */
  branches: Map<string, string[]>;
  /** Faults injected so far, by kind (status code, reset, lose_response, latency). */
  injected: Map<string, number>;
  setFaults(faults: Partial<FaultsConfig>): Promise<void>;
  clearFaults(): Promise<void>;
  /** Requests served so far (every route and status). */
  requestsServed(): number;
  /** Of those, the requests this script made itself (invariant checks), not the operator. */
  ownRequests(): number;
  /** The operator's requests so far by route (`GET /api_keys`), the script's own left out. */
  operatorRoutes(): Map<string, number>;
  endpoints(): Promise<PlatformEndpoint[]>;
  /** Every branch of every project (the seeded ones included). */
  platformBranches(): Promise<PlatformBranch[]>;
  /** Live (unrevoked) keys, the bootstrap key included. */
  liveKeys(): Promise<PlatformKey[]>;
  /** Whether a key value authenticates (GET /api_keys with it answers 200). */
  authenticates(value: string): Promise<boolean>;
  /** Failed operations of every project, as the operations list reports them. */
  failedOperations(): Promise<number>;
  /** Keys issued so far (creates and rotations, revoked ones included). */
  issuedKeys(): Promise<number>;
  /** SHA-256 digests of every key ever issued, revoked ones included (from the state file). */
  keyDigests(): Promise<Set<string>>;
  close(): Promise<void>;
}

export async function startPlatform(options: {
  random: Random;
  projects: number;
  branchesPerProject: number;
  stateFile: string;
  operationDurationMs: number;
}): Promise<ChaosPlatform> {
  const dice = options.random.fork();
  const projects = Array.from({ length: options.projects }, (_, i) => `chaos-p${i}`);
  const branches = new Map<string, string[]>();
  const seed = {
    projects: projects.map((id) => {
      const ids = Array.from({ length: options.branchesPerProject }, (_, i) => `br-${id}-${i}`);
      branches.set(id, ids);
      return { id, name: id, primary_branch: "main", branches: ids.map((b) => ({ id: b, name: b })) };
    }),
  };
  const emulator = await startEmulator({
    seed,
    operationDurationMs: options.operationDurationMs,
    stateFile: options.stateFile,
    random: () => dice.next(),
  });
  const injected = new Map<string, number>();
  // Tally what the fault switch did; the request log keeps no more than counts and routes.
  const log = emulator.requestLog;
  const add = log.add.bind(log);
  const routes = new Map<string, number>();
  const tally = (route: string, by: number) => routes.set(route, (routes.get(route) ?? 0) + by);
  log.add = (entry: RequestLogEntry) => {
    if (entry.fault !== undefined) injected.set(entry.fault, (injected.get(entry.fault) ?? 0) + 1);
    tally(entry.route, 1);
    add(entry);
  };

  let own = 0;
  // The script's own reads, taken back out of the route tally (they are all GETs of list routes).
  const ownRequest = (path: string) => {
    own++;
    tally(`GET ${path.split("?")[0]!.replace(/^\/projects\/[^/]+/, "/projects/:project_id")}`, -1);
  };
  const bootstrap = { authorization: `Bearer ${emulator.bootstrapKey}`, accept: "application/json" };
  const api = async <T>(path: string, headers: Record<string, string> = bootstrap): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      ownRequest(path);
      const response = await fetch(`${emulator.url}${path}`, { headers });
      // The invariant checks share the platform's rate budget with the operator.
      if (response.status === 429 && attempt < 20) {
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (!response.ok) throw new Error(`GET ${path}: ${response.status}`);
      return (await response.json()) as T;
    }
  };
  const admin = async (method: string, path: string, body?: unknown): Promise<void> => {
    const response = await fetch(`${emulator.adminUrl}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok)
      throw new Error(`${method} /emulator${path}: ${response.status} ${await response.text()}`);
  };

  const keyDigests = async (): Promise<Set<string>> => {
    await emulator.flush();
    const state = JSON.parse(await readFile(options.stateFile, "utf8")) as {
      world?: { apiKeys?: { digest: string }[] };
    };
    return new Set((state.world?.apiKeys ?? []).map((k) => k.digest));
  };

  return {
    emulator,
    projects,
    branches,
    injected,
    setFaults: (faults) => admin("PUT", "/faults", { requests: [], operations: [], ...faults }),
    clearFaults: () => admin("DELETE", "/faults"),
    requestsServed: () => log.total,
    ownRequests: () => own,
    operatorRoutes: () => new Map(routes),
    async endpoints() {
      const all: PlatformEndpoint[] = [];
      for (const project of projects) {
        const page = await api<{ endpoints: PlatformEndpoint[] }>(`/projects/${project}/endpoints`);
        all.push(...page.endpoints);
      }
      return all;
    },
    async platformBranches() {
      const all: PlatformBranch[] = [];
      for (const project of projects) {
        // One page holds them all (the list pages, 10 by default; 10,000 is the document's maximum).
        const page = await api<{ branches: PlatformBranch[] }>(`/projects/${project}/branches?limit=10000`);
        all.push(...page.branches.map((b) => ({ ...b, project_id: b.project_id ?? project })));
      }
      return all;
    },
    async liveKeys() {
      return api<PlatformKey[]>("/api_keys");
    },
    async authenticates(value) {
      for (let attempt = 0; ; attempt++) {
        ownRequest("/api_keys");
        const response = await fetch(`${emulator.url}/api_keys`, {
          headers: { authorization: `Bearer ${value}`, accept: "application/json" },
        });
        await response.body?.cancel();
        if (response.status === 429 && attempt < 20) {
          await new Promise((r) => setTimeout(r, 500));
          continue;
        }
        return response.status === 200;
      }
    },
    async failedOperations() {
      let failed = 0;
      for (const project of projects) {
        let cursor: string | undefined;
        for (let page = 0; page < 100; page++) {
          const query = `limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
          const body = await api<{ operations: { status: string }[]; pagination?: { cursor?: string } }>(
            `/projects/${project}/operations?${query}`,
          );
          failed += body.operations.filter((op) => op.status === "failed").length;
          if (body.operations.length === 0 || !body.pagination?.cursor) break;
          cursor = body.pagination.cursor;
        }
      }
      return failed;
    },
    issuedKeys: async () => (await keyDigests()).size,
    keyDigests,
    close: () => emulator.close(),
  };
}
