// `npm run image`: builds the operator's image from the Dockerfile with podman
// (no Docker engine), on the official base images when they can be pulled and
// on local stand-ins (base.ts) otherwise. The build host's npm configuration
// and CA bundle reach the build as build secrets, never as layers.
//
//   npm run image -- [--tag NAME] [--local-base] [--oci-archive FILE]
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { localBases } from "./base.ts";
import { cleanHost, ensurePackages, imagePackages, output, podmanEnv, run } from "./host.ts";

const repoRoot = resolve(import.meta.dirname, "..", "..");

export interface ImageBuild {
  tag: string;
  bases: { build: string; runtime: string };
  /** Bytes, as podman reports the image's size. */
  size: number;
  seconds: number;
}

async function dockerfileDefault(name: string): Promise<string> {
  const dockerfile = await readFile(join(repoRoot, "Dockerfile"), "utf8");
  const value = new RegExp(`^ARG ${name}=(\\S+)`, "m").exec(dockerfile)?.[1];
  if (!value) throw new Error(`the Dockerfile has no ARG ${name}=<default>`);
  return value;
}

async function pulled(image: string, env: NodeJS.ProcessEnv, log: (l: string) => void): Promise<boolean> {
  try {
    await output("timeout", ["60", "podman", "pull", "--quiet", image], env);
    return true;
  } catch {
    log(`image: cannot pull ${image}`);
    return false;
  }
}

/** The host's npm user config and CA bundle, for `--secret`; absent ones are left out. */
async function buildSecrets(): Promise<string[]> {
  const npmrc = process.env.NPM_CONFIG_USERCONFIG ?? join(homedir(), ".npmrc");
  let ca = process.env.NODE_EXTRA_CA_CERTS;
  if (!ca) {
    const cafile = (await output("npm", ["config", "get", "cafile"]).catch(() => "")).trim();
    if (cafile && cafile !== "null" && cafile !== "undefined") ca = cafile;
  }
  const args: string[] = [];
  if (existsSync(npmrc)) args.push("--secret", `id=npmrc,src=${npmrc}`);
  if (ca && existsSync(ca)) args.push("--secret", `id=ca,src=${ca}`);
  return args;
}

export async function buildImage(
  options: { tag?: string; localBase?: boolean; ociArchive?: string; log?: (l: string) => void } = {},
): Promise<ImageBuild> {
  const log = options.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const started = Date.now();
  await ensurePackages(imagePackages, log);
  const env = await podmanEnv();
  const tag = options.tag ?? "localhost/neon-cloud-operator:dev";

  let bases = {
    build: await dockerfileDefault("BUILD_IMAGE"),
    runtime: await dockerfileDefault("RUNTIME_IMAGE"),
  };
  const official =
    !options.localBase && (await pulled(bases.build, env, log)) && (await pulled(bases.runtime, env, log));
  if (!official) {
    const pkg = JSON.parse(await readFile(join(repoRoot, "package.json"), "utf8")) as {
      devDependencies: Record<string, string>;
    };
    const nodeVersion = pkg.devDependencies.node ?? "";
    if (process.version !== `v${nodeVersion}`) {
      throw new Error(
        `run through npm (Node ${nodeVersion} of the node devDependency), not Node ${process.version}`,
      );
    }
    const npmVersion = (await output("npm", ["--version"])).trim();
    bases = await localBases(process.execPath, nodeVersion, npmVersion, env, log);
  }

  log(`image: building ${tag} on ${bases.build} and ${bases.runtime}`);
  await run(
    "podman",
    [
      "build",
      "--network=host",
      "--layers",
      "--build-arg",
      `BUILD_IMAGE=${bases.build}`,
      "--build-arg",
      `RUNTIME_IMAGE=${bases.runtime}`,
      ...(await buildSecrets()),
      "--tag",
      tag,
      repoRoot,
    ],
    { env },
  );
  if (options.ociArchive) {
    await run("podman", ["save", "--format", "oci-archive", "--output", options.ociArchive, tag], { env });
  }
  const size = Number(
    (await output("podman", ["image", "inspect", "--format", "{{.Size}}", tag], env)).trim(),
  );
  await cleanHost(env);
  return { tag, bases, size, seconds: (Date.now() - started) / 1000 };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      tag: { type: "string" },
      "local-base": { type: "boolean", default: false },
      "oci-archive": { type: "string" },
    },
  });
  const built = await buildImage({
    tag: values.tag,
    localBase: values["local-base"],
    ociArchive: values["oci-archive"],
  });
  process.stdout.write(
    `${built.tag}: ${(built.size / 1e6).toFixed(1)} MB, built in ${built.seconds.toFixed(1)} s on ${built.bases.runtime}\n`,
  );
}
