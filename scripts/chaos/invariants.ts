// What must hold once the faults stop: every resource at its spec, nothing on
// the platform without its resource, every key held or revoked, every Secret's
// key working, and no key value in any operator log. Each check reports counts.
import { ownerMark, parseOwnerMark } from "../../src/controllers/managed/installation.ts";
import { chaosInstallationId } from "./operators.ts";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { apiKeyResourceKind, type ApiKeyObject } from "../../src/controllers/apikey/index.ts";
import { computeEndpointResourceKind } from "../../src/controllers/computeendpoint/index.ts";
import { secretKind, type Secret } from "../../src/controllers/managed/credentials.ts";
import type { KubeClient } from "../../src/runtime/index.ts";
import type { ChaosPlatform, PlatformEndpoint } from "./platform.ts";
import { persist, type EndpointObject, type Workload } from "./workload.ts";

/** The name the chaos installation gives the endpoint of ComputeEndpoint `namespace/name`. */
export function endpointMark(namespace: string, name: string): string {
  return ownerMark(chaosInstallationId, "ComputeEndpoint", namespace, name);
}

export interface InvariantResult {
  name: string;
  pass: boolean;
  counts: string;
  /** What was left behind, for a failure (never a key value). */
  problems: string[];
}

const ready = (conditions: { type: string; status: string }[] | undefined): boolean =>
  conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

function secretName(key: ApiKeyObject): string {
  return key.status?.secretName ?? `${key.metadata.name}-api-key`;
}

function secretValue(secret: Secret | undefined, field: string): string | undefined {
  const data = secret?.data?.[field];
  return data === undefined ? undefined : Buffer.from(data, "base64").toString("utf8");
}

/** Why a resource is not (yet) where its spec says; undefined when it is. */
async function endpointLag(
  kube: KubeClient,
  namespace: string,
  name: string,
  byId: Map<string, PlatformEndpoint>,
): Promise<string | undefined> {
  const obj = await kube.get<EndpointObject>(computeEndpointResourceKind, namespace, name);
  if (!obj) return `${namespace}/${name}: missing`;
  const { spec, status } = obj;
  const units = { min: spec.computeUnits?.min, max: spec.computeUnits?.max ?? spec.computeUnits?.min };
  if (!ready(status?.conditions)) {
    const reason = status?.conditions?.find((c) => c.type === "Ready")?.reason ?? "no Ready condition";
    return `${namespace}/${name}: not Ready (${reason})`;
  }
  if (status?.observedGeneration !== obj.metadata.generation)
    return `${namespace}/${name}: generation not observed`;
  if (!status || status.branchId !== spec.branchId)
    return `${namespace}/${name}: status branch ${status?.branchId}`;
  if (status.computeUnits?.min !== units.min || status.computeUnits?.max !== units.max) {
    return `${namespace}/${name}: status size ${JSON.stringify(status.computeUnits)}`;
  }
  const platform = status.endpointId ? byId.get(status.endpointId) : undefined;
  if (!platform) return `${namespace}/${name}: endpoint ${status.endpointId ?? "(none)"} not on the platform`;
  if (
    platform.branch_id !== spec.branchId ||
    platform.autoscaling_limit_min_cu !== units.min ||
    platform.autoscaling_limit_max_cu !== units.max
  ) {
    return `${namespace}/${name}: platform endpoint ${platform.id} differs from spec`;
  }
  return undefined;
}

async function keyLag(
  kube: KubeClient,
  platform: ChaosPlatform,
  namespace: string,
  name: string,
): Promise<string | undefined> {
  const obj = await kube.get<ApiKeyObject>(apiKeyResourceKind, namespace, name);
  if (!obj) return `${namespace}/${name}: missing`;
  const status = obj.status;
  if (!ready(status?.conditions)) return `${namespace}/${name}: not Ready`;
  if (!status || status.observedGeneration !== obj.metadata.generation) {
    return `${namespace}/${name}: generation not observed`;
  }
  if (status.pendingKeyName) return `${namespace}/${name}: a key create is pending`;
  const secret = await kube.get<Secret>(secretKind, namespace, secretName(obj));
  if (secretValue(secret, "keyId") !== String(status.keyId))
    return `${namespace}/${name}: Secret holds another key`;
  const value = secretValue(secret, "apiKey");
  if (!value || !(await platform.authenticates(value)))
    return `${namespace}/${name}: Secret's key does not work`;
  return undefined;
}

/** Everything that is not yet at its spec, across the given workloads. */
export async function lagging(
  kube: KubeClient,
  platform: ChaosPlatform,
  workloads: Workload[],
): Promise<{ lag: string[]; endpoints: number; keys: number; deletions: number }> {
  const byId = new Map((await platform.endpoints()).map((e) => [e.id, e]));
  const lag: string[] = [];
  let endpoints = 0;
  let keys = 0;
  let deletions = 0;
  for (const w of workloads) {
    for (const name of w.endpoints.keys()) {
      endpoints++;
      const why = await persist("read", () => endpointLag(kube, w.namespace, name, byId));
      if (why) lag.push(why);
    }
    for (const name of w.keys.keys()) {
      keys++;
      const why = await persist("read", () => keyLag(kube, platform, w.namespace, name));
      if (why) lag.push(why);
    }
    for (const d of w.deleted) {
      deletions++;
      const kind = d.kind === "ApiKey" ? apiKeyResourceKind : computeEndpointResourceKind;
      const left = await persist("read", () => kube.get(kind, w.namespace, d.name));
      if (left) lag.push(`${w.namespace}/${d.name}: deleted ${d.kind} still there`);
    }
  }
  return { lag, endpoints, keys, deletions };
}

/** Waits (bounded) until every resource is at its spec; returns the convergence check. */
export async function converge(
  kube: KubeClient,
  platform: ChaosPlatform,
  workloads: Workload[],
  timeoutMs: number,
): Promise<{ result: InvariantResult; ms: number }> {
  const started = Date.now();
  for (;;) {
    const state = await lagging(kube, platform, workloads);
    const done = state.lag.length === 0;
    if (done || Date.now() - started > timeoutMs) {
      const total = state.endpoints + state.keys + state.deletions;
      const ms = Date.now() - started;
      return {
        ms,
        result: {
          name: "every resource converges to its spec",
          pass: done,
          counts: `${total - state.lag.length}/${total} converged (${state.endpoints} ComputeEndpoints, ${state.keys} ApiKeys, ${state.deletions} deletions) in ${(ms / 1000).toFixed(1)} s`,
          problems: state.lag,
        },
      };
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Platform endpoints against the resources: none without its resource, no duplicates. */
export async function checkEndpoints(
  kube: KubeClient,
  platform: ChaosPlatform,
  workloads: Workload[],
): Promise<InvariantResult[]> {
  const endpoints = await platform.endpoints();
  const objects = (await persist("list", () => kube.list<EndpointObject>(computeEndpointResourceKind))).items;
  // An operator endpoint is named with its resource's owner mark (namespace and name, not UID).
  const liveMarks = new Set(
    objects.map((o) => endpointMark(o.metadata.namespace ?? "", o.metadata.name ?? "")),
  );
  // An endpoint a live resource holds by id (adopted, or taken back after a restore with new UIDs).
  const held = new Set(objects.map((o) => o.status?.endpointId).filter((id) => id !== undefined));
  const orphaned = new Set(workloads.flatMap((w) => [...w.orphaned]));
  const byName = new Map<string, PlatformEndpoint[]>();
  let seeded = 0;
  let owned = 0;
  let onPurpose = 0;
  const strays: string[] = [];
  for (const e of endpoints) {
    if (!e.name || !parseOwnerMark(e.name)) {
      seeded++;
      continue;
    }
    byName.set(e.name, [...(byName.get(e.name) ?? []), e]);
    if (liveMarks.has(e.name) || held.has(e.id)) owned++;
    else if (orphaned.has(e.name)) onPurpose++;
    else strays.push(`${e.id} (${e.name}, ${e.project_id}/${e.branch_id}) has no resource`);
  }
  if (seeded !== platform.projects.length) {
    strays.push(
      `${seeded} endpoints without an operator name, expected the ${platform.projects.length} seeded`,
    );
  }
  const duplicates: string[] = [];
  for (const [name, list] of byName) {
    if (list.length > 1) duplicates.push(`${name}: ${list.map((e) => e.id).join(", ")}`);
  }
  const claimed = new Map<string, string[]>();
  for (const o of objects) {
    const id = o.status?.endpointId;
    if (id) claimed.set(id, [...(claimed.get(id) ?? []), `${o.metadata.namespace}/${o.metadata.name}`]);
  }
  for (const [id, owners] of claimed) {
    if (owners.length > 1) duplicates.push(`${id} claimed by ${owners.join(", ")}`);
  }
  return [
    {
      name: "no endpoint on the platform without its resource",
      pass: strays.length === 0,
      counts: `${endpoints.length - seeded} operator endpoints: ${owned} with their resource, ${onPurpose} orphaned on purpose, ${strays.length} strays`,
      problems: strays,
    },
    {
      name: "no duplicate endpoints",
      pass: duplicates.length === 0,
      counts: `${byName.size} endpoint names, ${claimed.size} endpoint ids claimed, ${duplicates.length} duplicates`,
      problems: duplicates,
    },
  ];
}

/** Platform keys against the ApiKeys: each live key held (current) or in its grace period; Secrets' keys work. */
export async function checkKeys(
  kube: KubeClient,
  platform: ChaosPlatform,
  workloads: Workload[],
): Promise<InvariantResult[]> {
  const listKeys = async () =>
    (await persist("list", () => kube.list<ApiKeyObject>(apiKeyResourceKind))).items;
  // Rotation goes on while we look: a key counts as held if either snapshot of the ApiKeys holds it.
  const before = await listKeys();
  const live = await platform.liveKeys();
  const after = await listKeys();
  const current = new Set<number>();
  const grace = new Set<number>();
  const pending = new Set<string>();
  for (const k of [...before, ...after]) {
    if (k.status?.keyId !== undefined) current.add(k.status.keyId);
    if (k.status?.previousKeyId !== undefined) grace.add(k.status.previousKeyId);
    // Recorded before the create: a key being issued, or one whose create answer died with a process.
    if (k.status?.pendingKeyName) pending.add(k.status.pendingKeyName);
  }
  let held = 0;
  let graced = 0;
  let issuing = 0;
  let bootstrap = 0;
  const strays: string[] = [];
  for (const key of live) {
    if (!key.name.startsWith("chaos-")) bootstrap++;
    else if (current.has(key.id)) held++;
    else if (grace.has(key.id)) graced++;
    else if (pending.has(key.name)) issuing++;
    else strays.push(`key ${key.id} (${key.name}) is live but in no Secret`);
  }

  let working = 0;
  const broken: string[] = [];
  const names = new Set(workloads.flatMap((w) => [...w.keys.keys()].map((n) => `${w.namespace}/${n}`)));
  for (const k of after.filter((o) => names.has(`${o.metadata.namespace}/${o.metadata.name}`))) {
    const secret = await persist("read", () =>
      kube.get<Secret>(secretKind, k.metadata.namespace ?? "", secretName(k)),
    );
    const value = secretValue(secret, "apiKey");
    if (value && (await platform.authenticates(value))) working++;
    else
      broken.push(
        `${k.metadata.namespace}/${k.metadata.name}: Secret ${secretName(k)} ${value ? "holds a key that does not work" : "holds no key"}`,
      );
  }
  return [
    {
      name: "every platform key is in its Secret or revoked",
      pass: strays.length === 0,
      counts: `${live.length} live keys: ${held} in their Secret, ${graced} in a rotation's grace period, ${issuing} being issued, ${bootstrap} bootstrap, ${strays.length} strays`,
      problems: strays,
    },
    {
      name: "every ApiKey Secret holds a working key",
      pass: broken.length === 0 && working === names.size,
      counts: `${working}/${names.size} Secrets hold a working key`,
      problems: broken,
    },
  ];
}

/** Key values seen in Secrets, collected while the campaign runs (the platform shows a value once). */
export class KeyValues {
  readonly values = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly kube: KubeClient;

  constructor(kube: KubeClient) {
    this.kube = kube;
  }

  async collect(): Promise<void> {
    try {
      const secrets = await this.kube.list<Secret>(secretKind, { labelSelector: "neoncloud.dev/apikey" });
      for (const s of secrets.items) {
        const value = secretValue(s, "apiKey");
        if (value) this.values.add(value);
      }
    } catch {
      // the API server may be restarting; the next round catches up
    }
  }

  start(intervalMs = 1000): void {
    this.timer = setInterval(() => void this.collect(), intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** Searches every log for every key value ever seen and for any 64-character token that is an issued key. */
export async function checkLogs(
  logFiles: string[],
  known: Set<string>,
  digests: Set<string>,
): Promise<InvariantResult> {
  let bytes = 0;
  let tokens = 0;
  const leaks: string[] = [];
  for (const file of logFiles) {
    const text = await readFile(file, "utf8").catch(() => "");
    bytes += text.length;
    let found = 0;
    for (const value of known) if (text.includes(value)) found++;
    for (const run of text.matchAll(/[a-z0-9]{64,}/g)) {
      for (let i = 0; i + 64 <= run[0].length; i++) {
        tokens++;
        const digest = createHash("sha256")
          .update(run[0].slice(i, i + 64))
          .digest("hex");
        if (digests.has(digest)) found++;
      }
    }
    if (found > 0) leaks.push(`${file}: ${found} key values`);
  }
  return {
    name: "no key value in any log",
    pass: leaks.length === 0,
    counts: `${logFiles.length} operator logs (${(bytes / 1e6).toFixed(1)} MB) searched for ${known.size} key values seen in Secrets and ${digests.size} issued keys (${tokens} candidate tokens): ${leaks.length} logs with a leak`,
    problems: leaks,
  };
}
