import { defineConfig } from 'vitest/config';

/**
 * Files that run in one shared worker (no fresh process and module graph per file): they must
 * leave no process-wide state behind — no registered policy or source, no global dispatcher,
 * no environment change, no signal handler, no mock. The per-file start-up they skip was a
 * third of the unit files' wall time and over a third of these integration files'.
 */
const UNIT_ISOLATED = [
  // Registers a probe policy; the conformance and allocation suites iterate every registered one.
  'src/balancing/balancer.test.ts',
];
const INTEGRATION_SHARED = [
  'test/api/**/*.test.ts',
  'test/deploy/**/*.test.ts',
  'test/doctor/errors.test.ts',
  'test/doctor/prescription.test.ts',
  'test/doctor/rbac.test.ts',
  'test/kubernetes/**/*.test.ts',
  'test/sim/**/*.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests open real sockets and time-sensitive load loops; on two cores
    // running files in parallel turns ratios into noise. (Measured: running the unit files in
    // parallel saved nothing on two cores either.) One file at a time, one project after the
    // other (groupOrder).
    fileParallelism: false,
    pool: 'forks',
    reporters: ['default', './vitest.summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          exclude: UNIT_ISOLATED,
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'unit-isolated', include: UNIT_ISOLATED, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: {
          name: 'integration-shared',
          include: INTEGRATION_SHARED,
          isolate: false,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: INTEGRATION_SHARED,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
