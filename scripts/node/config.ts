// The node's configuration files, all inside its state directory: containerd
// (v3 config), the CNI bridge network, and kubelet's KubeletConfiguration.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { network } from "./host.ts";

export const nodeName = "neon-node";
/** The name containerd's CRI asks for; registry.k8s.io cannot be pulled here, so ours is imported under it. */
export const sandboxImage = "registry.k8s.io/pause:3.10.2";
/** Debian's containernetworking-plugins. */
const cniBinDir = "/usr/lib/cni";

export interface NodePaths {
  dir: string;
  containerdSocket: string;
  containerdConfig: string;
  cniConfDir: string;
  kubeletConfig: string;
  kubeletRoot: string;
  logs: string;
}

export function nodePaths(dir: string): NodePaths {
  return {
    dir,
    containerdSocket: join(dir, "containerd", "containerd.sock"),
    containerdConfig: join(dir, "containerd", "config.toml"),
    cniConfDir: join(dir, "cni"),
    kubeletConfig: join(dir, "kubelet.yaml"),
    kubeletRoot: join(dir, "kubelet"),
    logs: join(dir, "logs"),
  };
}

export async function writeContainerdConfig(paths: NodePaths): Promise<void> {
  const base = join(paths.dir, "containerd");
  await mkdir(base, { recursive: true });
  const toml = `version = 3
root = "${join(base, "root")}"
state = "${join(base, "state")}"
# NRI would listen on /var/run/nri, "opt" installs into /opt/containerd.
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt"]

[grpc]
  address = "${paths.containerdSocket}"

[ttrpc]
  address = "${join(base, "containerd.sock.ttrpc")}"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${sandboxImage}"

[plugins.'io.containerd.cri.v1.runtime']
  # The sandbox may not lower OOM scores; asking to would fail every container.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        # Debian's runc: crun refuses this machine's hybrid cgroups.
        BinaryName = "/usr/sbin/runc"
        Root = "${join(base, "runc")}"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["${cniBinDir}"]
    conf_dir = "${paths.cniConfDir}"
    max_conf_num = 1
`;
  await writeFile(paths.containerdConfig, toml);
}

export async function writeCniConfig(paths: NodePaths): Promise<void> {
  await mkdir(paths.cniConfDir, { recursive: true });
  const conf = {
    cniVersion: "1.0.0",
    name: "neon-pods",
    plugins: [
      {
        type: "bridge",
        bridge: network.bridge,
        isGateway: true,
        // No masquerading: pods have no business beyond this machine.
        ipMasq: false,
        ipam: {
          type: "host-local",
          dataDir: join(paths.dir, "ipam"),
          ranges: [[{ subnet: network.podCIDR, gateway: network.address }]],
          routes: [{ dst: "0.0.0.0/0" }],
        },
      },
      { type: "loopback" },
    ],
  };
  await writeFile(join(paths.cniConfDir, "10-neon-pods.conflist"), JSON.stringify(conf, null, 2));
}

export async function writeKubeletConfig(paths: NodePaths, caFile: string): Promise<void> {
  const config = {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    // cgroups v1 (hybrid) here: kubelet 1.36 refuses it unless told.
    failCgroupV1: false,
    cgroupDriver: "cgroupfs",
    // The sandbox lacks the capability to lower OOM scores.
    oomScoreAdj: 0,
    containerRuntimeEndpoint: `unix://${paths.containerdSocket}`,
    podLogsDir: join(paths.dir, "pod-logs"),
    address: network.address,
    readOnlyPort: 0,
    healthzPort: 0,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: caFile },
    },
    authorization: { mode: "Webhook" },
    // No cluster DNS: the operator needs none, and pods get no resolver that
    // could point beyond this machine.
    resolvConf: "",
    // Out of disk is not something this suite tests; eviction would only
    // make a busy shared disk look like a failure.
    evictionHard: { "memory.available": "100Mi" },
    imageGCHighThresholdPercent: 100,
    failSwapOn: false,
    serializeImagePulls: false,
  };
  await writeFile(paths.kubeletConfig, JSON.stringify(config, null, 2));
}
