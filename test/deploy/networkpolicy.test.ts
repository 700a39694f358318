// The operator's NetworkPolicy as a network administrator reads it: ingress only to the ports the
// pod serves (probes, metrics), egress only to DNS and to HTTPS (the API server, the platform),
// in every way of installing, and the chart's values narrow or remove it. Whether it is enforced
// is the network plugin's business: the local node's plain bridge plugin enforces none, so no test
// here claims enforcement (docs/security.md, "Network").
import { beforeAll, describe, expect, test } from "vitest";
import {
  deployTools,
  find,
  findAll,
  helmTemplate,
  kustomize,
  kustomizeOverlay,
  toolsTimeoutMs,
  type Loose,
  type Manifest,
} from "./render.ts";

let renderings: Record<string, Manifest[]>;

beforeAll(async () => {
  await deployTools();
  renderings = {
    "deploy/base": await kustomize("deploy/base"),
    "deploy/namespaced": await kustomizeOverlay({ resources: ["deploy/namespaced"], namespace: "team-a" }),
    "chart defaults": await helmTemplate(),
    "chart with watchNamespaces": await helmTemplate({ "watchNamespaces[0]": "default" }),
  };
}, toolsTimeoutMs);

const dnsPeer = {
  namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
  podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
};
const tcp = (port: number) => ({ port, protocol: "TCP" });
const dnsRule = { to: [dnsPeer], ports: [{ port: 53, protocol: "UDP" }, tcp(53)] };

describe.each(["deploy/base", "deploy/namespaced", "chart defaults", "chart with watchNamespaces"])(
  "%s",
  (name) => {
    const policy = () => find(renderings[name]!, "NetworkPolicy");
    const deployment = () => find(renderings[name]!, "Deployment");

    test("selects the operator's pods, in their namespace, both ways", () => {
      expect(policy().metadata.namespace).toBe(deployment().metadata.namespace);
      expect(policy().spec.podSelector).toEqual({ matchLabels: deployment().spec.selector.matchLabels });
      expect(policy().spec.policyTypes).toEqual(["Ingress", "Egress"]);
    });

    test("lets in exactly the ports the pod serves: the probes and /metrics", () => {
      const served = deployment().spec.template.spec.containers[0].ports.map((p: Loose) => p.containerPort);
      const allowed = policy().spec.ingress.flatMap((rule: Loose) => rule.ports.map((p: Loose) => p.port));
      expect(allowed.sort()).toEqual(served.sort());
      expect(allowed).toEqual([8080, 8443]);
    });

    test("lets out DNS to the cluster's DNS pods, and TCP 443 and 6443 (API server, platform) only", () => {
      expect(policy().spec.egress).toEqual([dnsRule, { ports: [tcp(443), tcp(6443)] }]);
    });
  },
);

test("metrics.secure=false: only the probes' port, where /metrics is served then", async () => {
  const policy = find(await helmTemplate({ "metrics.secure": "false" }), "NetworkPolicy");
  expect(policy.spec.ingress).toEqual([{ ports: [tcp(8080)] }]);
});

test("the chart's values narrow the peers: scrapers, HTTPS destinations, DNS servers", async () => {
  const policy = find(
    await helmTemplate({
      "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name": "monitoring",
      "networkPolicy.httpsTo[0].ipBlock.cidr": "10.0.0.0/8",
      "networkPolicy.httpsPorts": "{443}",
      "networkPolicy.dnsTo[0].ipBlock.cidr": "169.254.20.10/32",
    }),
    "NetworkPolicy",
  );
  expect(policy.spec.ingress[1]).toEqual({
    ports: [tcp(8443)],
    from: [{ namespaceSelector: { matchLabels: { name: "monitoring" } } }],
  });
  expect(policy.spec.egress).toEqual([
    { to: [{ ipBlock: { cidr: "169.254.20.10/32" } }], ports: dnsRule.ports },
    { ports: [tcp(443)], to: [{ ipBlock: { cidr: "10.0.0.0/8" } }] },
  ]);
});

test("networkPolicy.enabled=false leaves it out", async () => {
  expect(findAll(await helmTemplate({ "networkPolicy.enabled": "false" }), "NetworkPolicy")).toEqual([]);
});
