// Ends every run with one plain line, "N passed, N failed, N skipped", that
// any CI can read without knowing vitest's own output.
import type { Reporter, TestModule } from "vitest/node";

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const module of testModules) {
      // A file that fails outside its tests (it does not load, a hook throws) still counts as a failure.
      const tests = [...module.children.allTests()];
      if (module.state() === "failed" && !tests.some((t) => t.result().state === "failed")) failed++;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failed++;
        else skipped++;
      }
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
