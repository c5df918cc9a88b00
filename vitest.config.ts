import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests open real sockets and time-sensitive load loops; on two cores
    // running files in parallel turns ratios into noise.
    fileParallelism: false,
    pool: 'forks',
    reporters: ['default', './vitest.summary-reporter.ts'],
  },
});
