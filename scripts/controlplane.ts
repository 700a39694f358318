// `npm run controlplane`: a local Kubernetes control plane for poking at by
// hand. Prints the kubeconfig path and the server version; Ctrl-C stops it.
import { startControlPlane } from "../tools/sandbox/controlplane.ts";

const controlPlane = await startControlPlane();
process.stdout.write(
  [
    `Kubernetes ${controlPlane.version} at ${controlPlane.server}`,
    `kubeconfig: ${controlPlane.kubeconfig}`,
    `kubectl:    ${controlPlane.binaries.kubectl}`,
    "",
    `  export KUBECONFIG=${controlPlane.kubeconfig}`,
    `  ${controlPlane.binaries.kubectl} get namespaces`,
    "",
    "Ctrl-C stops it.",
    "",
  ].join("\n"),
);
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  controlPlane.stop().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
