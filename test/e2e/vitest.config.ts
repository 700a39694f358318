import { defineConfig } from "vitest/config";

// The end-to-end suite (`npm run e2e`): slow, needs root, the network of the
// package registries and the one-node cluster of scripts/node/; never part of
// `npm test`. Files run one at a time: they share the node.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 900_000,
  },
});
