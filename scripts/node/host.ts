// What the one-node cluster changes on the host outside its own directory,
// set up and taken back: the pod bridge, a firewall table that keeps pods on
// this machine, the kernel settings kubelet and kube-proxy change, and the
// fixed paths, mounts, cgroups and firewall chains they leave behind even
// when pointed at a directory of their own.
import { existsSync } from "node:fs";
import { readFile, readdir, readlink, rm, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { output, run, systemPath } from "../image/host.ts";

/** The pod network: a bridge of our own on a range no other machine uses here. */
export const network = {
  bridge: "neon0",
  podCIDR: "10.244.0.0/24",
  /** The bridge's address: pods' gateway, where the API server and the emulator listen. */
  address: "10.244.0.1",
  prefix: 24,
} as const;

/** Our own nftables table (inet family: v4 and v6). */
const firewallTable = "neon-node";

const sys = (cmd: string, args: string[]) => run(cmd, args, { env: { ...process.env, PATH: systemPath } });
const sysOutput = (cmd: string, args: string[]) => output(cmd, args, { ...process.env, PATH: systemPath });

export async function createBridge(): Promise<void> {
  await sys("ip", ["link", "add", network.bridge, "type", "bridge"]);
  await sys("ip", ["addr", "add", `${network.address}/${network.prefix}`, "dev", network.bridge]);
  await sys("ip", ["link", "set", network.bridge, "up"]);
}

/**
 * Pods may talk to each other and to this machine (the API server, the
 * emulator), never beyond it: whatever they send that the host would forward
 * elsewhere is dropped, before any rule of kube-proxy's can accept it.
 */
export async function fenceBridge(): Promise<void> {
  const rules = [
    `table inet ${firewallTable} {`,
    "  chain forward {",
    "    type filter hook forward priority -300; policy accept;",
    // Counted, so a test can tell this rule dropped a packet (not a timeout elsewhere).
    `    iifname "${network.bridge}" oifname != "${network.bridge}" counter drop`,
    `    ip saddr ${network.podCIDR} oifname != "${network.bridge}" counter drop`,
    "  }",
    "}",
    "",
  ].join("\n");
  const file = `/tmp/neon-node-fence-${process.pid}.nft`;
  await writeFile(file, rules);
  try {
    await sys("nft", ["-f", file]);
  } finally {
    await rm(file, { force: true });
  }
}

/** Packets the fence has dropped so far (its rules' counters, summed). */
export async function fenceDrops(): Promise<number> {
  const listing = await sysOutput("nft", ["list", "chain", "inet", firewallTable, "forward"]);
  return [...listing.matchAll(/counter packets (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** Kernel settings kubelet (its "kernel tunables") and kube-proxy may change; restored on down. */
const sysctls = [
  "vm/overcommit_memory",
  "vm/panic_on_oom",
  "kernel/panic",
  "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys",
  "kernel/keys/root_maxbytes",
  "net/ipv4/ip_forward",
  "net/ipv4/conf/all/route_localnet",
];

export async function readSysctls(): Promise<Record<string, string>> {
  const values: Record<string, string> = {};
  for (const key of sysctls) {
    const value = await readFile(`/proc/sys/${key}`, "utf8").catch(() => undefined);
    if (value !== undefined) values[key] = value.trim();
  }
  return values;
}

export async function restoreSysctls(values: Record<string, string>): Promise<void> {
  for (const [key, value] of Object.entries(values)) {
    const now = (await readFile(`/proc/sys/${key}`, "utf8").catch(() => value)).trim();
    if (now !== value) await writeFile(`/proc/sys/${key}`, value).catch(() => undefined);
  }
}

/** nftables tables by "family name", e.g. "ip filter". */
export async function firewallTables(): Promise<string[]> {
  const text = await sysOutput("nft", ["list", "tables"]);
  return text
    .split("\n")
    .map((line) => line.replace(/^table\s+/, "").trim())
    .filter(Boolean);
}

/**
 * Tables that kubelet (iptables-nft: filter, nat, mangle with KUBE-* chains),
 * kube-proxy and we create. Those that did not exist before up are deleted
 * whole; in those that did, only the KUBE-* chains and the rules that jump
 * to them.
 */
const ourTableNames = new Set(["filter", "nat", "mangle", "raw", "kube-proxy", firewallTable]);

export async function cleanFirewall(tablesBefore: string[]): Promise<void> {
  for (const table of await firewallTables()) {
    const [family, name] = table.split(/\s+/);
    if (!family || !name || !ourTableNames.has(name)) continue;
    if (!tablesBefore.includes(table) || name === "kube-proxy" || name === firewallTable) {
      await sys("nft", ["delete", "table", family, name]);
      continue;
    }
    // A table that was there before: take out only what Kubernetes added.
    const listing = await sysOutput("nft", ["-a", "list", "table", family, name]);
    let chain = "";
    for (const line of listing.split("\n")) {
      const chainMatch = /^\s*chain (\S+) \{/.exec(line);
      if (chainMatch?.[1]) chain = chainMatch[1];
      const rule = /(?:jump|goto) KUBE-\S+.*# handle (\d+)/.exec(line);
      if (rule?.[1] && !chain.startsWith("KUBE-")) {
        await sys("nft", ["delete", "rule", family, name, chain, "handle", rule[1]]);
      }
    }
    const chains = [...listing.matchAll(/^\s*chain (KUBE-\S+) \{/gm)].map((m) => m[1] ?? "");
    for (const c of chains) await sys("nft", ["flush", "chain", family, name, c]);
    for (const c of chains) await sys("nft", ["delete", "chain", family, name, c]);
  }
}

/** Mount points at or under one of `roots`, deepest first. */
async function mountsUnder(roots: string[]): Promise<string[]> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  const points = info
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .map((p) => p.replace(/\\040/g, " "))
    .filter((p) => roots.some((root) => p === root || p.startsWith(`${root}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

export async function unmountUnder(roots: string[]): Promise<void> {
  // A mount can hide another at the same point; repeat until none is left.
  for (let round = 0; round < 5; round++) {
    const points = await mountsUnder(roots);
    if (points.length === 0) return;
    for (const point of points) {
      await sys("umount", [point]).catch(() => sys("umount", ["-l", point]).catch(() => undefined));
    }
  }
}

/** The cgroup directories kubelet makes for pods, in every hierarchy (cgroups v1 here, or v2). */
async function podCgroups(): Promise<string[]> {
  const roots: string[] = [];
  for (const controller of await readdir("/sys/fs/cgroup").catch(() => [] as string[])) {
    for (const base of [join("/sys/fs/cgroup", controller), "/sys/fs/cgroup"]) {
      const dir = join(base, "kubepods");
      if (existsSync(dir) && !roots.includes(dir)) roots.push(dir);
      const slice = join(base, "kubepods.slice");
      if (existsSync(slice) && !roots.includes(slice)) roots.push(slice);
    }
  }
  return roots;
}

async function cgroupTree(dir: string): Promise<string[]> {
  const dirs = [dir];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (entry.isDirectory()) dirs.push(...(await cgroupTree(join(dir, entry.name))));
  }
  return dirs;
}

/** The pids of every process in a pod's cgroup: the pods' containers, which the runtime started for us. */
export async function podProcesses(): Promise<number[]> {
  const pids = new Set<number>();
  for (const root of await podCgroups()) {
    for (const dir of await cgroupTree(root)) {
      const procs = await readFile(join(dir, "cgroup.procs"), "utf8").catch(() => "");
      for (const pid of procs.split("\n").filter(Boolean)) pids.add(Number(pid));
    }
  }
  return [...pids];
}

/** Removes the pods' cgroup directories, deepest first (each must be empty of processes). */
export async function removePodCgroups(): Promise<void> {
  for (const root of await podCgroups()) {
    const dirs = (await cgroupTree(root)).sort((a, b) => b.length - a.length);
    for (const dir of dirs) await rmdir(dir).catch(() => undefined);
  }
}

/** Processes whose executable is one of `binaries` (our own builds, by path). */
export async function processesOf(binaries: string[]): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const exe = await readlink(`/proc/${entry}/exe`).catch(() => "");
    if (binaries.includes(exe.replace(/ \(deleted\)$/, ""))) pids.push(Number(entry));
  }
  return pids;
}

/**
 * Paths outside its directory that the node's parts write whatever they are
 * told (kubelet: device plugins, container log links; containerd: its
 * default state; CNI: its cache and the pods' network namespaces).
 */
export const nodeHostPaths = [
  "/var/lib/kubelet",
  "/var/log/containers",
  "/var/log/pods",
  "/run/containerd",
  "/var/lib/cni",
  "/run/netns",
  "/run/runc",
  "/etc/cni/net.d/cni.lock",
];

/** Which of nodeHostPaths exist now: those are not ours to remove later. */
export function existingHostPaths(): string[] {
  return [...nodeHostPaths, "/etc/cni/net.d", "/etc/cni"].filter((p) => existsSync(p));
}

export async function removeHostPaths(keep: string[]): Promise<void> {
  await unmountUnder(nodeHostPaths.filter((p) => !keep.includes(p)));
  for (const path of nodeHostPaths) {
    if (!keep.includes(path)) await rm(path, { recursive: true, force: true });
  }
  for (const dir of ["/etc/cni/net.d", "/etc/cni"]) {
    if (!keep.includes(dir)) await rmdir(dir).catch(() => undefined); // only if empty
  }
}

/** Deletes the bridge and any veth still attached to it. */
export async function removeBridge(): Promise<void> {
  const links = await sysOutput("ip", ["-o", "link", "show", "master", network.bridge]).catch(() => "");
  for (const line of links.split("\n")) {
    const name = /^\d+:\s+([^@:]+)/.exec(line)?.[1];
    if (name) await sys("ip", ["link", "del", name]).catch(() => undefined);
  }
  if (existsSync(`/sys/class/net/${network.bridge}`)) await sys("ip", ["link", "del", network.bridge]);
}
