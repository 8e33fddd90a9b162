import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  // Inlined code (Pothos) would otherwise resolve graphql's ESM build while yoga loads its CommonJS
  // build: two copies, "schema from another module or realm". Pin every import to the one Node loads.
  resolve: { alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }] },
  test: {
    globalSetup: ['./test/support/global-setup.ts'],
    // Each test file's own database, copied from the template global setup migrates.
    setupFiles: ['./test/support/file-database.ts'],
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Pothos and graphql must be one copy in the test realm ("schema from another module or realm").
    server: { deps: { inline: [/@pothos\//] } },
    pool: 'forks',
    // Two files at a time (vitest's default on 2 cores is one): most of a file's time is spent waiting
    // for child processes (serve, the CLI, runtimes) to start and for real clocks, which leaves the
    // other core idle. Safe because each file has its own database (test/support/file-database.ts).
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
