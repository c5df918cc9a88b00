import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests open real sockets and time-sensitive load loops; on two cores
    // running files in parallel turns ratios into noise. (Measured: running the unit files in
    // parallel saved nothing on two cores either, so both projects run one file at a time.)
    fileParallelism: false,
    pool: 'forks',
    reporters: ['default', './vitest.summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          // The unit files share no global state (no global dispatcher, no mocks, no process
          // signal handlers), so one worker runs them all without a fresh process and module
          // graph per file: that per-file start-up was a third of their wall time.
          isolate: false,
          // Before the integration files, never beside them.
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
