import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Two projects: "unit" tests need no Kubernetes (the emulator over HTTP is
// started by the tests themselves); "cluster" tests (*.kube.test.ts) share one
// real control plane started by the global setup.
export default defineConfig({
  test: {
    // Vitest's default is one worker fewer than the cores: one on a 2-core machine, which ran the
    // cluster tests one file after another (19 minutes). They mostly wait on the operator and the
    // platform's operations, each in namespaces of its own, so two files at once on 2 cores halve
    // the wait without making the CPU the bottleneck.
    maxWorkers: Math.max(2, availableParallelism()),
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
