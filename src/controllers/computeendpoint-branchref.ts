// A ComputeEndpoint may name its branch by a Branch resource (`spec.branchRef`) instead of an id.
// This wraps the ComputeEndpoint adapter: each pass reads the Branch from the cache; until it is
// Ready with a branch id the endpoint waits (WaitingForBranch), and once it is, the adapter sees a
// spec whose `branchId` is that id, so creating, moving and claiming a branch work as for an id.
import type { ComputeEndpointSpec, ResolvedComputeEndpointSpec } from "../api/computeendpoint.ts";
import { objectKey, type KubeObject, type WatchSpec } from "../runtime/index.ts";
import { branchResourceKind, type BranchObject } from "./branch.ts";
import { readyBranchId } from "./branch-parent.ts";
import type { ExternalClient, Pass } from "./managed/types.ts";

/**
 * Index of the ComputeEndpoint cache: `namespace/name` of the Branch resource each one names, or
 * `namespace/#branch-id` for one naming its branch by id (no object name holds a `#`).
 */
export const branchRefIndex = "branchRef";

export function branchRefKeys(obj: KubeObject & { spec?: unknown }): string[] {
  const spec = obj.spec as Partial<ComputeEndpointSpec> | undefined;
  const namespace = obj.metadata.namespace ?? "";
  if (spec?.branchRef?.name) return [`${namespace}/${spec.branchRef.name}`];
  return spec?.branchId ? [`${namespace}/#${spec.branchId}`] : [];
}

/**
 * A Branch that changes (becomes Ready, gets its id, is reset, goes) wakes the endpoints naming
 * it, and those on its branch by id (their connection Secrets follow its resets).
 */
export const branchRefWatch: WatchSpec = {
  kind: branchResourceKind,
  map: (branch, primary) => {
    const branchId = (branch as BranchObject).status?.branchId;
    const byId = branchId
      ? primary.byIndex(branchRefIndex, `${branch.metadata.namespace ?? ""}/#${branchId}`)
      : [];
    return [...primary.byIndex(branchRefIndex, objectKey(branch)), ...byId];
  },
};

/** How long an endpoint waits for its Branch before looking again without being woken. */
const waitForBranchMs = 60_000;

type Resolution<S> = { pass: Pass<ResolvedComputeEndpointSpec, S> } | { waiting: string };

function resolve<S>(pass: Pass<ComputeEndpointSpec, S>): Resolution<S> {
  const { spec } = pass;
  if (spec.branchId !== undefined) return { pass: withBranch(pass, spec.branchId) };
  const name = spec.branchRef?.name;
  if (name === undefined) return { waiting: "the spec names no branch (branchId or branchRef)" };
  const found = readyBranchId(
    pass.cache<BranchObject>(branchResourceKind),
    pass.obj.metadata.namespace,
    name,
  );
  return "waiting" in found ? found : { pass: withBranch(pass, found.branchId) };
}

/** The same pass (its live object, status and saves) with the branch resolved in its spec. */
function withBranch<S>(
  pass: Pass<ComputeEndpointSpec, S>,
  branchId: string,
): Pass<ResolvedComputeEndpointSpec, S> {
  const spec: ResolvedComputeEndpointSpec = { ...pass.spec, branchId };
  return Object.create(pass, { spec: { value: spec, enumerable: true } }) as Pass<
    ResolvedComputeEndpointSpec,
    S
  >;
}

function resolved<S>(pass: Pass<ComputeEndpointSpec, S>): Pass<ResolvedComputeEndpointSpec, S> {
  const r = resolve(pass);
  if ("waiting" in r) throw new Error(`branch not resolved: ${r.waiting}`);
  return r.pass;
}

export function withBranchRef<S extends { branchId?: string | undefined }, Diff>(
  inner: ExternalClient<ResolvedComputeEndpointSpec, S, Diff>,
): ExternalClient<ComputeEndpointSpec, S, Diff> {
  const client: ExternalClient<ComputeEndpointSpec, S, Diff> = {
    observe(pass) {
      const r = resolve(pass);
      if ("waiting" in r) {
        return Promise.resolve({
          state: "busy",
          status: {},
          reason: "WaitingForBranch",
          message: r.waiting,
          retryAfterMs: waitForBranchMs,
        });
      }
      return inner.observe(r.pass);
    },
    create: (pass) => inner.create(resolved(pass)),
    update: (pass, observed) => inner.update(resolved(pass), observed),
    // Deleting needs no branch: a Branch already gone must not hold the endpoint's deletion.
    delete(pass) {
      const r = resolve(pass);
      return inner.delete("waiting" in r ? withBranch(pass, pass.status.branchId ?? "") : r.pass);
    },
  };
  const publish = inner.publish?.bind(inner);
  if (publish) client.publish = (pass) => publish(resolved(pass));
  return client;
}
