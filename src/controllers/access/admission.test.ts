// The grants option on the managed layer, with a fake kind and no API server: where the operator's
// default credentials may act (CredentialsGrants), and the projects a Project of the namespace made.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../runtime/index.ts";
import {
  World,
  condition,
  pass,
  resource,
  store,
  thing,
  type Spec,
  type Status,
} from "../../../test/support/managed-kind.ts";
import { ownerMark } from "../managed/installation.ts";
import { withGrants, type ProjectMaker } from "./grants.ts";

const onOperatorKey = { onOperatorKey: true };
const grant = (projects: string[]) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "CredentialsGrant",
  metadata: { name: "team" },
  spec: { namespaces: ["ns"], projects },
});
const granted = (world: World, options: { enabled?: boolean; madeBy?: ProjectMaker[] } = {}) =>
  thing(
    world,
    withGrants<Spec, Status>((spec) => ({ projectId: spec.projectId }), { enabled: true, ...options }),
  );

describe("the operator's default credentials", () => {
  it("are refused, nothing sent, in a namespace no CredentialsGrant names", async () => {
    const world = new World();
    const run = await pass(granted(world), resource(onOperatorKey), { operatorKey: true });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ reason: "NotGranted" });
    expect(condition(run.status, "Ready")?.message).toContain("CredentialsGrant");
    expect(condition(run.status, "Stalled")?.status).toBe("True");
  });

  it("are refused for a project the grant does not name", async () => {
    const world = new World();
    const caches = { credentialsgrants: store([grant(["other"])]) };
    const run = await pass(granted(world), resource(onOperatorKey), { operatorKey: true, caches });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")?.reason).toBe("NotGranted");
  });

  it("in the resource's own namespace need no grant (a namespaced install's key is the namespace's own)", async () => {
    const world = new World();
    await pass(granted(world), resource(onOperatorKey), { operatorKey: "ns" });
    expect(world.sent).toEqual(["create"]);
  });

  it("serve only their own namespace where the installation may not read grants", async () => {
    const world = new World();
    const caches = { credentialsgrants: store([grant(["p"])]) };
    const run = await pass(granted(world, { enabled: false }), resource(onOperatorKey), {
      operatorKey: true,
      caches,
    });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")?.message).toContain("set spec.credentials");
  });

  it("a resource holding an object waits for a grant before its deletion sends anything", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(granted(world), resource(onOperatorKey, { thingId: "t-1" }), {
      operatorKey: true,
      cleanup: true,
    });
    expect(condition(run.status, "Ready")?.reason).toBe("NotGranted");
    expect(world.sent).toEqual([]);
  });

  it("act where a grant names the namespace and the project", async () => {
    const world = new World();
    const caches = { credentialsgrants: store([grant(["p"])]) };
    await pass(granted(world), resource(onOperatorKey), { operatorKey: true, caches });
    expect(world.sent).toEqual(["create"]);
  });

  it("a reference still waiting is what the resource reports, before any grant is looked at", async () => {
    const world = new World();
    const run = await pass(granted(world), resource({ ...onOperatorKey, otherRef: "base" }), {
      operatorKey: true,
    });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")?.reason).toBe("WaitingForReference");
  });
});

describe("a project another kind made (a Project's), on the operator's default credentials", () => {
  const makerKind = { group: "test.dev", version: "v1", plural: "makers", kind: "Maker" };
  const made = (name: string, projectId: string, meta: Partial<KubeObject["metadata"]> = {}) => ({
    apiVersion: "test.dev/v1",
    kind: "Maker",
    metadata: { name, namespace: "ns", uid: `uid-${name}`, ...meta },
    status: { made: projectId },
  });
  /** The platform shows the project made by the maker `ns/maker` (its mark), and no other. */
  const maker: ProjectMaker = {
    kind: makerKind,
    created: (o: KubeObject) => (o as { status?: { made?: string } }).status?.made,
    confirm: (_client, _projectId, mark) =>
      Promise.resolve(mark === ownerMark("00000000", "Maker", "ns", "maker")),
  };

  it.each<[string, KubeObject[], string[], string | undefined]>([
    ["is usable once the platform shows the maker's mark on it", [made("maker", "p")], ["create"], undefined],
    [
      "is not, when only a status says so (another resource's forged one)",
      [made("forger", "p")],
      [],
      "NotGranted",
    ],
    [
      "is not, once its maker is being deleted",
      [made("maker", "p", { deletionTimestamp: "2026-11-25T00:00:02Z" })],
      [],
      "NotGranted",
    ],
    ["is not, for another project", [made("maker", "other")], [], "NotGranted"],
  ])("%s", async (_, makers, sent, reason) => {
    const world = new World();
    const run = await pass(granted(world, { madeBy: [maker] }), resource(onOperatorKey), {
      operatorKey: true,
      caches: { [makerKind.plural]: store(makers) },
    });
    expect(world.sent).toEqual(sent);
    expect(condition(run.status, "Ready")?.reason).toBe(reason ?? "Creating");
  });
});
