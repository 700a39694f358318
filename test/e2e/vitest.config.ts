import { defineConfig } from "vitest/config";

// The end-to-end suite (`npm run e2e`): slow, needs root and the package
// registries; never part of `npm test` (named *.e2e.ts so the unit project,
// which takes every *.test.ts, leaves them alone). Files run one at a time.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.ts"],
    // The node suite has its own config and command (`npm run e2e:node`).
    exclude: ["test/e2e/node/**", "**/node_modules/**"],
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 900_000,
  },
});
