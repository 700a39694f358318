// One operator replica as its own process, for tests that kill it or send it
// SIGTERM. It reconciles Widgets in one namespace (sleeping spec.size ms) and
// prints one JSON line per happening on stdout.
//   node replica.ts KUBECONFIG NAMESPACE IDENTITY
import { Action } from "../../../src/runtime/action.ts";
import { KubeClient } from "../../../src/runtime/kube.ts";
import { Manager } from "../../../src/runtime/manager.ts";
import { loadKubeConfig, replicaElection, widgetKind, type Widget } from "./cluster.ts";

const [kubeconfig, namespace, identity] = process.argv.slice(2);
if (!kubeconfig || !namespace || !identity) {
  process.stderr.write("usage: replica.ts KUBECONFIG NAMESPACE IDENTITY\n");
  process.exit(2);
}
const print = (line: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ identity, ...line })}\n`);
};
const manager = new Manager({
  client: new KubeClient(loadKubeConfig(kubeconfig)),
  identity,
  leaderElection: { namespace, ...replicaElection },
  shutdownDeadlineMs: 5_000,
  onActingChange: (acting) => print({ event: "acting", acting }),
});
manager.controller<Widget>({
  kind: widgetKind(),
  namespaces: [namespace],
  reconciler: {
    async reconcile(obj) {
      const name = obj.metadata.name;
      print({ event: "reconcile-start", name, acting: manager.isActing });
      await new Promise((r) => setTimeout(r, obj.spec?.size ?? 0));
      print({ event: "reconciled", name });
      return Action.done();
    },
  },
});
await manager.run();
print({ event: "stopped" });
process.exit(0);
