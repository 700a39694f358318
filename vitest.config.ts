import { defineConfig } from "vitest/config";

// Two projects: "unit" tests need no Kubernetes (the emulator over HTTP is
// started by the tests themselves); "cluster" tests (*.kube.test.ts) share one
// real control plane started by the global setup.
export default defineConfig({
  test: {
    reporters: ["default", "./test/support/summary-reporter.ts"],
    projects: [
      {
        test: {
          name: "unit",
          include: ["src/**/*.test.ts", "tools/**/*.test.ts", "test/**/*.test.ts"],
          exclude: ["**/*.kube.test.ts", "**/*.slow.test.ts", "node_modules/**"],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: "cluster",
          include: ["src/**/*.kube.test.ts", "tools/**/*.kube.test.ts", "test/**/*.kube.test.ts"],
          exclude: ["**/*.slow.test.ts", "node_modules/**"],
          globalSetup: ["test/support/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
