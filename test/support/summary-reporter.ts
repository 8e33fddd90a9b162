// Prints one plain closing line, `tests: N passed, N failed[, N skipped]`, that CI log readers and
// humans can find without knowing vitest's output format, after a line naming the slowest files (the
// suite has a time budget: this says where it goes).
import type { Reporter, TestModule } from 'vitest/node';

const SLOWEST_SHOWN = 8;

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
    }
    const slowest = testModules
      .map((module) => {
        const { prepareDuration, setupDuration, collectDuration, duration } = module.diagnostic();
        return { name: module.relativeModuleId, seconds: (prepareDuration + setupDuration + collectDuration + duration) / 1000 };
      })
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, SLOWEST_SHOWN);
    if (slowest.length > 1) console.log(`\nslowest files: ${slowest.map((file) => `${file.name} ${file.seconds.toFixed(1)} s`).join(', ')}`);
    console.log(`\ntests: ${counts.passed} passed, ${counts.failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ''}`);
  }
}
