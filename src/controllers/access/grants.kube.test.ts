// CredentialsGrants on the real API server: what admission refuses, that a
// namespace's user never meets them, and that a controller wired with
// grantWatches() decides from its caches and wakes a refused (terminally
// failed) resource as soon as a grant, or a namespace's label, grants it.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Action,
  ContentType,
  Controller,
  KubeClient,
  TerminalError,
  type Reconciler,
} from "../../runtime/index.ts";
import { adminKubeConfig, eventually, kubectl } from "../../../test/support/kube.ts";
import { namespacedUser, type NamespacedUser } from "../../../test/support/namespaced-user.ts";
import { installCrd, widgetKind, type Widget } from "../../../test/support/runtime/cluster.ts";
import { credentialsGrantResource, grantWatches, grantsOf, namespaceResource } from "./grants.ts";

const widgets = widgetKind();
const run = randomBytes(3).toString("hex");
const grantName = (name: string) => `grants-test-${run}-${name}`;

let client: KubeClient;
let dev: NamespacedUser;
const controllers: Controller<Widget>[] = [];

beforeAll(async () => {
  client = new KubeClient(adminKubeConfig());
  await installCrd(client, widgets);
  dev = await namespacedUser("grants");
});

afterAll(async () => {
  await Promise.all(controllers.map((c) => c.stop()));
  await kubectl(["delete", "credentialsgrants", "-l", `grants-test=${run}`, "--ignore-not-found"]);
  if (dev) await kubectl(["delete", "namespace", dev.namespace, "--wait=false"]).catch(() => undefined);
});

function grant(name: string, spec: object) {
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "CredentialsGrant",
    metadata: { name: grantName(name), labels: { "grants-test": run } },
    spec,
  };
}

describe("the CredentialsGrant kind", () => {
  it("is cluster-scoped, with its defaults filled in", async () => {
    await kubectl(["apply", "-f", "-"], {
      input: JSON.stringify(grant("defaults", { namespaces: [dev.namespace] })),
    });
    const stored = JSON.parse(
      await kubectl(["get", "credentialsgrant", grantName("defaults"), "-o", "json"]),
    ) as { metadata: { namespace?: string }; spec: object };
    expect(stored.metadata.namespace).toBeUndefined();
    expect(stored.spec).toEqual({
      namespaces: [dev.namespace],
      projects: [],
      createProjects: false,
      mintApiKeys: false,
      mintProjectApiKeys: false,
    });
    await kubectl(["delete", "credentialsgrant", grantName("defaults")]);
  });

  it.each([
    ["neither namespaces nor a selector", { projects: ["*"] }, "set namespaces, namespaceSelector, or both"],
    [
      "In without values",
      { namespaceSelector: { matchExpressions: [{ key: "team", operator: "In" }] } },
      "In and NotIn need values",
    ],
    [
      "Exists with values",
      { namespaceSelector: { matchExpressions: [{ key: "team", operator: "Exists", values: ["a"] }] } },
      "Exists and DoesNotExist take none",
    ],
    ["a project id the platform cannot have", { namespaces: ["a"], projects: ["Proj X"] }, "projects"],
  ])("refuses %s at admission", async (_name, spec, message) => {
    await expect(
      kubectl(["apply", "-f", "-"], { input: JSON.stringify(grant("refused", spec)) }),
    ).rejects.toThrow(message);
  });

  it("stays out of `kubectl get neon`, which a namespace's user can run", async () => {
    await expect(dev.kubectl(["get", "neon"])).resolves.toBeDefined();
    await expect(dev.kubectl(["get", "credentialsgrants"])).rejects.toThrow(/forbidden/i);
  });
});

describe("a controller wired with grantWatches()", () => {
  /** Each reconcile's decision, newest last. */
  const decisions: string[] = [];
  const reconciler: Reconciler<Widget> = {
    reconcile(obj, ctx) {
      const refused = grantsOf((kind) => ctx.cache(kind)).check(obj.metadata.namespace ?? "", {
        projectId: obj.spec?.note ?? "",
      });
      decisions.push(refused ? refused.message : "granted");
      // Refused for good: only a change of a grant or a namespace may bring it back.
      if (refused) throw Object.assign(new TerminalError(refused.message), { reason: refused.reason });
      return Promise.resolve(Action.done());
    },
  };

  beforeAll(async () => {
    const controller = new Controller<Widget>(
      { kind: widgets, reconciler, namespaces: [dev.namespace], watches: grantWatches<Widget>() },
      { client },
    );
    controllers.push(controller);
    controller.startCaches();
    await controller.waitForSync();
    controller.startWorkers();
    // Its caches hold the grants and the namespaces (metadata only), cluster-wide.
    expect(controller.caches.map((i) => i.kind)).toEqual(
      expect.arrayContaining([credentialsGrantResource, namespaceResource]),
    );
  });

  const last = () => decisions.at(-1);
  /** Runs `act`, then waits for a decision after it that meets `expected`. */
  const after = async (act: () => Promise<unknown>, what: string, expected: (d: string) => boolean) => {
    const mark = decisions.length;
    await act();
    await eventually(() => (decisions.slice(mark).some(expected) ? true : undefined), { what });
  };
  const refusedNow = (d: string) => d.includes("not granted");
  const grantedNow = (d: string) => d === "granted";

  it("refuses without a grant, and goes on as soon as one names the namespace and project", async () => {
    const create = () =>
      client.create(widgets, {
        apiVersion: `${widgets.group}/${widgets.version}`,
        kind: "Widget",
        metadata: { name: "app", namespace: dev.namespace },
        spec: { note: "proj-x" },
      });
    await after(create, "the refusal", refusedNow);
    expect(last()).toBe(
      `the operator's default credentials are not granted to namespace ${dev.namespace} for project proj-x: ` +
        "a cluster administrator can grant them with a CredentialsGrant (docs/security.md), " +
        "or set spec.credentials to a Secret of this namespace",
    );
    const byName = grant("by-name", { namespaces: [dev.namespace], projects: ["proj-x"] });
    await after(
      () => kubectl(["apply", "-f", "-"], { input: JSON.stringify(byName) }),
      "granted after the grant appeared",
      grantedNow,
    );
  });

  it("refuses again when the grant goes, and a selector grants once the namespace carries the label", async () => {
    await after(
      () => kubectl(["delete", "credentialsgrant", grantName("by-name")]),
      "refused after the grant went",
      refusedNow,
    );
    const label = { [`team-${run}`]: "b" };
    const byLabel = grant("by-label", { namespaceSelector: { matchLabels: label }, projects: ["*"] });
    // The grant's own event wakes the resource, whose namespace lacks the label yet.
    await after(
      () => kubectl(["apply", "-f", "-"], { input: JSON.stringify(byLabel) }),
      "a decision on the new grant",
      () => true,
    );
    expect(last()).toMatch(/not granted/);
    await after(
      () =>
        client.patch(
          namespaceResource,
          undefined,
          dev.namespace,
          { metadata: { labels: label } },
          ContentType.MergePatch,
        ),
      "granted after the namespace's label changed",
      grantedNow,
    );
  });
});
