// `npm run node:up` / `npm run node:down`: a one-node Kubernetes cluster on
// this machine (cluster.ts), left running between the two. Needs root, like
// the rest of the machine-level tooling.
//
//   npm run node:up     prints the admin kubeconfig and the API server's URL
//   npm run node:down   stops everything and takes back what up changed
import { nodeDown, nodeUp } from "./cluster.ts";

const command = process.argv[2];
if (command === "up") {
  const cluster = await nodeUp();
  process.stdout.write(
    `${JSON.stringify({ kubeconfig: cluster.kubeconfig, server: cluster.server, node: cluster.nodeName, address: cluster.address })}\n`,
  );
} else if (command === "down") {
  await nodeDown();
} else {
  process.stderr.write("usage: node scripts/node/main.ts up|down\n");
  process.exitCode = 2;
}
