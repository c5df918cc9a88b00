import { defineConfig } from 'vitest/config';

/** Files that keep a worker of their own although their folder shares one. */
const ISOLATED = [
  // Registers a probe policy; the conformance and allocation suites iterate every registered one.
  'src/balancing/balancer.test.ts',
  // Timing-sensitive and flaky under load in either mode (2 of 5 runs of test/proxy here, one
  // sharing a worker, one in its own): kept apart so that a failure is never blamed on sharing.
  'test/proxy/proxy-fair-share.test.ts',
];
/**
 * Integration files that run in one shared worker, as all unit files do (no fresh process and
 * module graph per file): they must leave no process-wide state behind — no registered policy
 * or source, no global dispatcher, no environment change, no signal handler, no mock. The
 * per-file start-up this skips was a quarter to a half of these files' wall time (measured back
 * to back on a shared two-core machine: the 62 unit files 83 s → 42 s, these 67 files
 * 216 s → 164 s with the same time inside the tests).
 */
const INTEGRATION_SHARED = [
  'test/sim/cli.test.ts',
  'test/deploy/**/*.test.ts',
  'test/docs/**/*.test.ts',
  'test/doctor/errors.test.ts',
  'test/doctor/rbac.test.ts',
  'test/kubernetes/**/*.test.ts',
  'test/proxy/**/*.test.ts',
];
/**
 * Files whose figures come from the simulator's virtual clock, seeded randomness, or fixed
 * inputs — no socket, no wall-clock deadline tighter than a process start — so two of them at
 * once on two cores change nothing but the wall time. They run in a project of their own, two
 * workers wide.
 */
const DETERMINISTIC = ['test/sim/**/*.test.ts', 'test/api/**/*.test.ts', 'test/doctor/prescription.test.ts'];
/** Of those, the ones that start a browser (the sim's HTML report): with the socket tests. */
const DETERMINISTIC_BUT = ['test/sim/cli.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests open real sockets and time-sensitive load loops; on two cores
    // running files in parallel turns ratios into noise. (Measured: running the unit files in
    // parallel saved nothing on two cores either.) One file at a time, one project after the
    // other (groupOrder) — but for the simulator's files and their like (DETERMINISTIC), two at once.
    fileParallelism: false,
    pool: 'forks',
    reporters: ['default', './vitest.summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          exclude: ISOLATED,
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'isolated', include: ISOLATED, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: {
          name: 'deterministic',
          include: DETERMINISTIC,
          exclude: DETERMINISTIC_BUT,
          isolate: false,
          fileParallelism: true,
          maxWorkers: 2,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-shared',
          include: INTEGRATION_SHARED,
          exclude: ISOLATED,
          isolate: false,
          sequence: { groupOrder: 3 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...INTEGRATION_SHARED, ...DETERMINISTIC],
          sequence: { groupOrder: 4 },
        },
      },
    ],
  },
});
