import { defineConfig } from "vitest/config";

// The suite on a one-node cluster (`npm run e2e:node`): root, the package
// registries, and the whole machine's network and firewall for a few
// minutes; not part of `npm run e2e`. One file, one cluster.
export default defineConfig({
  test: {
    include: ["test/e2e/node/**/*.e2e.ts"],
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 900_000,
  },
});
