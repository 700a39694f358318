# The operator's container image. Build: docker build -t <registry>/neon-cloud-operator:<version> .
#
# The steps, as plain commands (a test mirrors them outside Docker):
#   build stage:   npm ci && npm run build                  -> dist/
#   runtime stage: npm ci --omit=dev --ignore-scripts       -> production node_modules/ only
#                  copy dist/ and crds/; run as uid 65532
#   start:         node --optimize-for-size dist/cli.js run (configured by NEON_OPERATOR_* variables)
# Nothing is written outside /tmp at run time, so the root filesystem can be
# read-only (deploy/ mounts an emptyDir at /tmp).

# Node 24, the version the package's `node` devDependency pins.
ARG NODE_IMAGE=node:24.21.0-trixie-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only; none of them needs an install script.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
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
