// The one-node cluster's binaries, built from the Go module proxy and cached
// outside the repo like the control plane: kubelet, kube-proxy and
// kube-scheduler from test/controlplane's module (same Kubernetes release, in
// the control plane's cache directory), containerd, its runc shim, ctr and the
// sandbox's pause process from test/controlplane/containerd.
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  buildGoTools,
  cacheBase,
  moduleHash,
  requirement,
  stderrLog,
  type Log,
} from "../../tools/sandbox/go-build.ts";
import {
  buildControlPlane,
  controlPlaneBinDir,
  controlPlaneModuleDir,
  kubernetesLdflags,
  type ControlPlaneBinaries,
} from "../../tools/sandbox/controlplane.ts";

const containerdModuleDir = resolve(controlPlaneModuleDir, "containerd");

export interface NodeBinaries extends ControlPlaneBinaries {
  kubelet: string;
  kubeProxy: string;
  kubeScheduler: string;
  containerd: string;
  /** containerd finds its shim on PATH: this directory goes first. */
  containerdBinDir: string;
  ctr: string;
  pause: string;
}

export async function buildNodeBinaries(log: Log = stderrLog): Promise<NodeBinaries> {
  const controlPlane = await buildControlPlane(log);
  const { dir: kubeDir, version } = await controlPlaneBinDir();
  const ldflags = kubernetesLdflags(version);
  const kube = (name: string) => ({
    pkg: `k8s.io/kubernetes/cmd/${name}`,
    binary: join(kubeDir, name),
    ldflags,
    describe: `node: building ${name} ${version} into ${kubeDir}`,
  });
  await buildGoTools(
    controlPlaneModuleDir,
    [kube("kubelet"), kube("kube-proxy"), kube("kube-scheduler")],
    log,
  );

  const goMod = await readFile(join(containerdModuleDir, "go.mod"), "utf8");
  const containerdVersion = requirement(goMod, "github.com/containerd/containerd/v2");
  const runtimeDir = join(
    cacheBase(),
    "node",
    "bin",
    `containerd-${containerdVersion}-${await moduleHash(containerdModuleDir)}`,
  );
  // The storage drivers that need cgo are left out; overlayfs is all we use.
  const tags = ["no_btrfs", "no_devmapper", "no_zfs"];
  const runtime = (name: string, pkg: string) => ({
    pkg,
    binary: join(runtimeDir, name),
    ldflags: ["-s", "-w", `-X github.com/containerd/containerd/v2/version.Version=${containerdVersion}`],
    tags,
    describe: `node: building ${name} ${containerdVersion} into ${runtimeDir}`,
  });
  await buildGoTools(
    containerdModuleDir,
    [
      runtime("containerd", "github.com/containerd/containerd/v2/cmd/containerd"),
      runtime("containerd-shim-runc-v2", "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"),
      runtime("ctr", "github.com/containerd/containerd/v2/cmd/ctr"),
      { ...runtime("pause", "."), describe: `node: building the sandbox's pause into ${runtimeDir}` },
    ],
    log,
  );
  return {
    ...controlPlane,
    kubelet: join(kubeDir, "kubelet"),
    kubeProxy: join(kubeDir, "kube-proxy"),
    kubeScheduler: join(kubeDir, "kube-scheduler"),
    containerd: join(runtimeDir, "containerd"),
    containerdBinDir: runtimeDir,
    ctr: join(runtimeDir, "ctr"),
    pause: join(runtimeDir, "pause"),
  };
}

if (import.meta.main) await buildNodeBinaries();
