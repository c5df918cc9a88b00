import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Files that keep a worker of their own although their folder shares one. */
const ISOLATED = [
  // Registers a probe policy; the conformance and allocation suites iterate every registered one.
  'src/balancing/balancer.test.ts',
  // Measures bytes per pick, which depends on what V8 learnt from every earlier caller of the
  // same picker code in the process (see the file).
  'src/balancing/allocation.test.ts',
  // Timing-sensitive and flaky under load in either mode (2 of 5 runs of test/proxy here, one
  // sharing a worker, one in its own): kept apart so that a failure is never blamed on sharing.
  'test/proxy/proxy-fair-share.test.ts',
  // Sets undici's global dispatcher (and puts the previous one back).
  'test/client/caller-compatibility.test.ts',
  // Installs SIGUSR2 handlers on the test process (drainOnSignal in process).
  'test/server/drain.test.ts',
  // Its figure (prequal against least-request on real sockets) was measured in a worker of its own.
  'test/client/load-aware-balancing.test.ts',
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
  'test/cli/**/*.test.ts',
  'test/client/**/*.test.ts',
  'test/deploy/**/*.test.ts',
  'test/docs/**/*.test.ts',
  'test/doctor/cli.test.ts',
  'test/doctor/diagnosis.test.ts',
  'test/doctor/errors.test.ts',
  'test/doctor/rbac.test.ts',
  'test/doctor/sidecar-prescription.test.ts',
  'test/examples/**/*.test.ts',
  'test/kubernetes/**/*.test.ts',
  'test/proxy/**/*.test.ts',
  'test/server/**/*.test.ts',
];
/**
 * Files whose figures come from the simulator's virtual clock, seeded randomness, or fixed
 * inputs — no socket, no wall-clock deadline tighter than a process start — so two of them at
 * once on two cores change nothing but the wall time. They run in a project of their own, two
 * workers wide.
 */
const DETERMINISTIC = ['test/sim/**/*.test.ts', 'test/api/**/*.test.ts', 'test/doctor/prescription.test.ts'];
/**
 * The longest files of the two-wide project, longest first (seconds of one run of the whole
 * suite on a loaded two-core machine). They start first, so that the short files fill in
 * beside them and the project does not end with one worker finishing a long file alone — on a
 * fresh clone (CI) vitest has no recorded durations and would start the largest files first,
 * which puts a 50 s file of 54 lines last.
 */
const DETERMINISTIC_LONGEST_FIRST = [
  'test/sim/cli.test.ts', // 80 (child processes and a browser)
  'test/sim/evenlb-policies.test.ts', // 51
  'test/sim/recycling-curve.test.ts', // 25, and the curve's 13 runs while collecting
  'test/api/public-api.test.ts', // 19
  // 34 at 5,000 trials a case; 41% of those requests since (its tests alone: 5.5-6.1 s → 3.7-3.9 s).
  'test/sim/closed-forms.test.ts',
  'test/sim/golden.test.ts', // 16
  'test/sim/fair-share-fill.test.ts', // 15
  'test/sim/rolling-update.test.ts', // 14
  'test/sim/load-aware-targets.test.ts', // 14
  'test/doctor/prescription.test.ts', // 11
  'test/api/root-import.test.ts', // 10
];

/** vitest's order, except that DETERMINISTIC_LONGEST_FIRST's files lead their project in that order. */
class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification): number => {
      const i = DETERMINISTIC_LONGEST_FIRST.findIndex((p) => f.moduleId.endsWith(`/${p}`));
      return i < 0 ? DETERMINISTIC_LONGEST_FIRST.length : i;
    };
    // Within each project only: the projects keep their order (groupOrder first).
    const byProject = new Map<string, TestSpecification[]>();
    for (const f of sorted) {
      const group = byProject.get(f.project.name) ?? [];
      group.push(f);
      byProject.set(f.project.name, group);
    }
    return [...byProject.values()].flatMap((group) =>
      group
        .map((f, i) => ({ f, i }))
        .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
        .map(({ f }) => f),
    );
  }
}

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
    sequence: { sequencer: LongestFirstSequencer },
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
