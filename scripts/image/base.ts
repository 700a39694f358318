// Stand-ins for the official base images when they cannot be pulled: a Debian
// trixie rootfs from mmdebstrap with the Node binary of the npm `node` package
// and npm from its npm package (the build stages), and a bare rootfs holding
// only that Node binary, the libraries it links, CA certificates and the
// nonroot user (the runtime stage, as bare as the distroless image).
import { chmod, copyFile, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { containersDir, output, run } from "./host.ts";

export interface LocalBases {
  build: string;
  runtime: string;
}

/** The Debian suite of the official node:24-trixie-slim and distroless debian13 images. */
const suite = "trixie";

async function exists(tag: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  try {
    await output("podman", ["image", "exists", tag], env);
    return true;
  } catch {
    return false;
  }
}

async function importRootfs(
  rootfs: string,
  tag: string,
  changes: string[],
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const args = ["import"];
  for (const c of changes) args.push("--change", c);
  const tar = join(dirname(rootfs), `${basename(rootfs)}.tar`);
  await run("tar", ["-C", rootfs, "--numeric-owner", "-cf", tar, "."]);
  await run("podman", [...args, tar, tag], { env });
  await rm(tar, { force: true });
}

/** The shared libraries `binary` needs inside `rootfs`, as ldd there resolves them. */
async function linkedLibraries(rootfs: string, binary: string): Promise<string[]> {
  const text = await output("chroot", [rootfs, "ldd", binary]);
  const paths = new Set<string>();
  for (const line of text.split("\n")) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (match?.[1]) paths.add(match[1]);
  }
  return [...paths];
}

async function buildBase(
  work: string,
  node: string,
  npmTarball: string,
  tag: string,
  env: NodeJS.ProcessEnv,
) {
  const rootfs = join(work, "build");
  await run("mmdebstrap", ["--variant=minbase", "--include=ca-certificates", "--quiet", suite, rootfs]);
  await copyFile(node, join(rootfs, "usr/local/bin/node"));
  await chmod(join(rootfs, "usr/local/bin/node"), 0o755);
  const npmDir = join(rootfs, "usr/local/lib/node_modules/npm");
  await mkdir(npmDir, { recursive: true });
  await run("tar", ["-xzf", npmTarball, "-C", npmDir, "--strip-components=1", "--no-same-owner"]);
  await symlink("../lib/node_modules/npm/bin/npm-cli.js", join(rootfs, "usr/local/bin/npm"));
  await symlink("../lib/node_modules/npm/bin/npx-cli.js", join(rootfs, "usr/local/bin/npx"));
  // The apt lists and caches are of no use in an image.
  await rm(join(rootfs, "var/lib/apt/lists"), { recursive: true, force: true });
  await mkdir(join(rootfs, "var/lib/apt/lists/partial"), { recursive: true });
  await importRootfs(rootfs, tag, ["ENV PATH=/usr/local/bin:/usr/bin:/bin", 'CMD ["node"]'], env);
  return rootfs;
}

async function runtimeBase(work: string, buildRootfs: string, tag: string, env: NodeJS.ProcessEnv) {
  const rootfs = join(work, "runtime");
  await mkdir(join(rootfs, "nodejs/bin"), { recursive: true });
  await copyFile(join(buildRootfs, "usr/local/bin/node"), join(rootfs, "nodejs/bin/node"));
  await chmod(join(rootfs, "nodejs/bin/node"), 0o755);
  for (const lib of await linkedLibraries(buildRootfs, "/usr/local/bin/node")) {
    // Keep the name ldd printed (a soname link), with the content of its
    // target, under /usr: /lib and /lib64 are links there (merged /usr).
    const target = join(rootfs, lib.replace(/^\/(lib|lib64)\//, "/usr/$1/"));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(await realpath(join(buildRootfs, lib)), target);
  }
  // /lib64/ld-linux-x86-64.so.2, the loader's path written in the binary, goes through these.
  for (const dir of ["lib", "lib64"]) {
    await mkdir(join(rootfs, "usr", dir), { recursive: true });
    await symlink(`usr/${dir}`, join(rootfs, dir));
  }
  await mkdir(join(rootfs, "etc/ssl/certs"), { recursive: true });
  await copyFile(
    join(buildRootfs, "etc/ssl/certs/ca-certificates.crt"),
    join(rootfs, "etc/ssl/certs/ca-certificates.crt"),
  );
  await writeFile(
    join(rootfs, "etc/passwd"),
    "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
  );
  await writeFile(join(rootfs, "etc/group"), "root:x:0:\nnonroot:x:65532:\n");
  await writeFile(join(rootfs, "etc/nsswitch.conf"), "passwd: files\ngroup: files\nhosts: files dns\n");
  await mkdir(join(rootfs, "tmp"));
  await chmod(join(rootfs, "tmp"), 0o1777);
  await mkdir(join(rootfs, "home/nonroot"), { recursive: true });
  await run("chown", ["65532:65532", join(rootfs, "home/nonroot")]);
  await importRootfs(
    rootfs,
    tag,
    [
      "ENV PATH=/nodejs/bin:/usr/local/bin:/usr/bin:/bin",
      "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
      "USER 65532:65532",
      "WORKDIR /home/nonroot",
      'ENTRYPOINT ["/nodejs/bin/node"]',
    ],
    env,
  );
}

/**
 * Builds both bases once per Node version (kept in podman's storage): `node`
 * is the binary to ship, `npmVersion` the npm release for the build stages.
 */
export async function localBases(
  node: string,
  nodeVersion: string,
  npmVersion: string,
  env: NodeJS.ProcessEnv,
  log = console.error,
): Promise<LocalBases> {
  const bases = {
    build: `localhost/neon-node-build:${nodeVersion}-${suite}`,
    runtime: `localhost/neon-node-runtime:${nodeVersion}-${suite}`,
  };
  if ((await exists(bases.build, env)) && (await exists(bases.runtime, env))) return bases;
  log(`image: building local bases ${bases.build} and ${bases.runtime}`);
  const work = await mkdtemp(join(containersDir(), "base-"));
  try {
    const packed = await output("npm", ["pack", `npm@${npmVersion}`, "--silent", "--pack-destination", work]);
    const npmTarball = join(work, packed.trim().split("\n").pop() ?? "");
    const buildRootfs = await buildBase(work, node, npmTarball, bases.build, env);
    await runtimeBase(work, buildRootfs, bases.runtime, env);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return bases;
}
