# The operator's container image.
#   docker build -t <registry>/neon-cloud-operator:<version> .
#   npm run image            (no Docker engine: podman, with a locally built base
#                             when the official ones cannot be pulled; docs/install.md)
#
# Three stages: `build` compiles dist/ from src/, `deps` installs the production
# dependencies, and `runtime` holds only node, dist/, crds/ and those
# dependencies: no package manager, no shell, nothing of tools/ or test/. It
# runs as uid 65532 and writes nothing outside /tmp, so the root filesystem can
# be read-only (deploy/ mounts an emptyDir at /tmp).
#
# Registry and CA settings of the build host come in as build secrets, never as
# layers: `--secret id=npmrc,src=<npm user config>` and `--secret id=ca,src=<CA
# bundle>`; both are optional.

# Node 24, the version the package's `node` devDependency pins; a Debian with npm
# for the build stages, a distroless Node (no shell, no package manager) to run.
ARG BUILD_IMAGE=node:24.21.0-trixie-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian13:nonroot

FROM ${BUILD_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npmrc --mount=type=secret,id=ca \
    NPM_CONFIG_USERCONFIG=/run/secrets/npmrc NODE_EXTRA_CA_CERTS=/run/secrets/ca \
    npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# tsc itself, not `npm run build`: the `node` devDependency's install script
# (skipped above) is what would put a node on the scripts' PATH.
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

FROM ${BUILD_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only; none of them needs an install script.
RUN --mount=type=secret,id=npmrc --mount=type=secret,id=ca \
    NPM_CONFIG_USERCONFIG=/run/secrets/npmrc NODE_EXTRA_CA_CERTS=/run/secrets/ca \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund
# Type declarations and source maps are for editors and debuggers, not for
# node: about 40 MB, mostly of @kubernetes/client-node.
RUN find node_modules -type f \( -name "*.d.ts" -o -name "*.d.mts" -o -name "*.d.cts" -o -name "*.map" \) -delete

FROM ${RUNTIME_IMAGE} AS runtime
ENV NODE_ENV=production
# The distroless image keeps node in /nodejs/bin, off the default PATH.
ENV PATH=/nodejs/bin:/usr/local/bin:/usr/bin:/bin
WORKDIR /app
# package.json: "type": "module" makes dist/*.js ES modules.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY crds ./crds
# Root owns the files, the process runs as an unprivileged user that cannot change them.
USER 65532:65532
EXPOSE 8080
# Exec form: node is PID 1 and receives SIGTERM itself; the operator drains its
# work, releases the leader Lease and exits.
# --optimize-for-size: V8 keeps the pages a garbage collection frees in a pool
# and returns them to the system only in a memory-reducing collection. Without
# the flag its memory reducer never judged the idle operator idle enough to run
# one, so RSS stayed at the high-water mark of its busiest moment (the initial
# sync); with it, RSS follows the live heap (docs/performance-steady-10000.md).
# Node sizes the heap limit from the container's memory limit. The bench
# (scripts/bench/) starts the operator with the flags written here.
ENTRYPOINT ["node", "--optimize-for-size", "dist/cli.js"]
CMD ["run"]
