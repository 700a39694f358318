// A restore from a backup that recreates the objects (new UIDs) while the platform resources
// still exist: what Velero does into a rebuilt cluster. The backup holds each resource's
// metadata (name, labels, annotations) and spec, and the key Secrets; the restore strips status,
// finalizers and owner references (Velero's defaults); nothing is added to the manifests. The
// operator must find what it made from what the backup kept (a ComputeEndpoint its endpoint by its
// owner mark): no second endpoint, no key left live in nobody's hands.
import { apiKeyResourceKind, type ApiKeyObject } from "../../src/controllers/apikey/index.ts";
import { computeEndpointResourceKind } from "../../src/controllers/computeendpoint/index.ts";
import { secretKind, type Secret } from "../../src/controllers/managed/credentials.ts";
import { ContentType, type KubeClient, type KubeObject, type ResourceKind } from "../../src/runtime/index.ts";
import { campaign, flowsWithRestores, type CampaignResult, type Chaos } from "./campaigns.ts";
import { persist, type Workload } from "./workload.ts";

interface Saved {
  kind: ResourceKind;
  obj: KubeObject & { apiVersion?: string; kind?: string; spec?: unknown };
}

/** What a backup keeps of an object: no uid, resourceVersion, status, finalizers or owners. */
function backedUp(obj: Saved["obj"]): Saved["obj"] {
  const { name, namespace, labels, annotations } = obj.metadata;
  return {
    ...(obj.apiVersion ? { apiVersion: obj.apiVersion } : {}),
    ...(obj.kind ? { kind: obj.kind } : {}),
    metadata: { name, namespace, labels, annotations },
    ...(obj.spec !== undefined ? { spec: obj.spec } : {}),
    ...("data" in obj ? { data: (obj as Secret).data } : {}),
    ...("type" in obj ? { type: (obj as Secret).type } : {}),
  };
}

async function removeFinalizers(kube: KubeClient, kind: ResourceKind, namespace: string, name: string) {
  await persist(`unfinalize ${name}`, async () => {
    try {
      await kube.patch(kind, namespace, name, { metadata: { finalizers: null } }, ContentType.MergePatch);
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) throw err;
    }
  });
}

async function deleteNow(kube: KubeClient, kind: ResourceKind, namespace: string, name: string) {
  await persist(`delete ${name}`, async () => {
    try {
      await kube.delete(kind, namespace, name);
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) throw err;
    }
  });
  // Gone before it is created again (no finalizer is left to wait for).
  for (let i = 0; i < 200 && (await kube.get(kind, namespace, name)); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Backs up the workload's ComputeEndpoints, ApiKeys and key Secrets, deletes them without running
 * finalizers, and restores them with new UIDs. Returns how many objects were recreated.
 */
async function recreateAll(kube: KubeClient, w: Workload): Promise<number> {
  const ns = w.namespace;
  const saved: Saved[] = [];
  for (const name of w.endpoints.keys()) {
    const obj = await persist("get", () => kube.get(computeEndpointResourceKind, ns, name));
    if (obj) saved.push({ kind: computeEndpointResourceKind, obj });
  }
  for (const name of w.keys.keys()) {
    const obj = await persist("get", () => kube.get<ApiKeyObject>(apiKeyResourceKind, ns, name));
    if (!obj) continue;
    saved.push({ kind: apiKeyResourceKind, obj });
    const secretName = (obj.spec as { secretName?: string }).secretName ?? `${name}-api-key`;
    const secret = await persist("get", () => kube.get<Secret>(secretKind, ns, secretName));
    if (secret) saved.push({ kind: secretKind, obj: secret });
  }
  // Restored as backed up: a ComputeEndpoint finds its endpoint by its owner mark (its namespace
  // and name), which the new UID does not change.
  const backup = saved.map((s) => ({ kind: s.kind, obj: backedUp(s.obj) }));
  // The disaster: the objects go without their finalizers running (the Secrets with them).
  for (const { kind, obj } of saved) {
    const name = obj.metadata.name ?? "";
    if (kind !== secretKind) await removeFinalizers(kube, kind, ns, name);
    await deleteNow(kube, kind, ns, name);
  }
  // The restore: Secrets first, then the resources (Velero restores Secrets before custom resources).
  const order = [secretKind, computeEndpointResourceKind, apiKeyResourceKind];
  for (const kind of order) {
    for (const entry of backup.filter((b) => b.kind === kind)) {
      const created = await persist(`restore ${entry.obj.metadata.name}`, () => kube.create(kind, entry.obj));
      const name = created.metadata.name ?? "";
      const uid = created.metadata.uid ?? "";
      const endpoint = kind === computeEndpointResourceKind ? w.endpoints.get(name) : undefined;
      if (endpoint) endpoint.uid = uid;
      const key = kind === apiKeyResourceKind ? w.keys.get(name) : undefined;
      if (key) key.uid = uid;
    }
  }
  return backup.length;
}

/**
 * Objects recreated from a backup with new UIDs mid-run, once while the operator runs and once
 * while it is down (a restore into a rebuilt cluster). Not in the default run: see
 * docs/reliability.md for what it found.
 */
export function recreated(ctx: Chaos): Promise<CampaignResult> {
  return campaign(
    ctx,
    "recreate",
    "objects recreated from a backup with new UIDs (status, finalizers, owner references stripped)",
    async (w) => {
      const done = await flowsWithRestores(ctx, w, () => recreateAll(ctx.kube, w));
      return { counts: { restores: done.restores, "objects recreated": done.objects } };
    },
  );
}
