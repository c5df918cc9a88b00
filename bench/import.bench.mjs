// What `import 'evenlb'` costs a program, against `import 'undici'` (which evenlb itself
// loads) in the same run. Each sample is a fresh Node process that times one dynamic import
// with process.hrtime (Node's own start-up is not counted; the whole process's wall time is
// recorded beside it). The two imports alternate, and which goes first alternates per round,
// so drifting background load falls on both alike. One unrecorded warm-up of each first (disk
// cache). The package is imported by name from the repository (its `exports` map, so the built
// dist/), as an application imports it. Target: evenlb's median ≤ 1.3× undici's.
//
// Run: npm run bench -- import   (EVENLB_BENCH_IMPORT_RUNS=N for N samples each; default 9)
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { printTable, writeResult } from './machine.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Math.max(1, Number(process.env.EVENLB_BENCH_IMPORT_RUNS ?? 9));
const TARGET_RATIO = 1.3;
const SPECIFIERS = ['evenlb', 'undici'];
const CHILD_TIMEOUT_MS = 60_000;

const childSource = (specifier) =>
  `const t0 = process.hrtime.bigint();
await import(${JSON.stringify(specifier)});
process.stdout.write(String(Number(process.hrtime.bigint() - t0) / 1e6));`;

/** One fresh process importing `specifier`: { importMs, processMs }. */
function sample(specifier) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', childSource(specifier)], {
    cwd: repo,
    encoding: 'utf8',
    timeout: CHILD_TIMEOUT_MS,
  });
  const processMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`import(${specifier}) exited ${r.status ?? r.signal}: ${r.stderr}`);
  return { importMs: Number(r.stdout), processMs };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const loadBefore = loadavg();
for (const specifier of SPECIFIERS) sample(specifier); // warm-up, not recorded
const samples = Object.fromEntries(SPECIFIERS.map((s) => [s, []]));
for (let round = 0; round < RUNS; round++) {
  const order = round % 2 === 0 ? SPECIFIERS : [...SPECIFIERS].reverse();
  for (const specifier of order) samples[specifier].push(sample(specifier));
}
const loadAfter = loadavg();

const figures = Object.fromEntries(
  SPECIFIERS.map((s) => [
    s,
    {
      medianImportMs: median(samples[s].map((x) => x.importMs)),
      minImportMs: Math.min(...samples[s].map((x) => x.importMs)),
      maxImportMs: Math.max(...samples[s].map((x) => x.importMs)),
      medianProcessMs: median(samples[s].map((x) => x.processMs)),
      importMs: samples[s].map((x) => Math.round(x.importMs * 10) / 10),
    },
  ]),
);
const ratio = figures.evenlb.medianImportMs / figures.undici.medianImportMs;
const processRatio = figures.evenlb.medianProcessMs / figures.undici.medianProcessMs;

printTable(
  SPECIFIERS.map((s) => ({
    import: s,
    'median ms': figures[s].medianImportMs,
    'min ms': figures[s].minImportMs,
    'max ms': figures[s].maxImportMs,
    'process median ms': figures[s].medianProcessMs,
  })),
);
process.stdout.write(
  `\nimport('evenlb') / import('undici'), medians of ${RUNS} alternating runs: ${ratio.toFixed(2)}× ` +
    `(target ≤ ${TARGET_RATIO}: ${ratio <= TARGET_RATIO ? 'met' : 'NOT met'}); whole process ${processRatio.toFixed(2)}×\n` +
    `load average ${loadBefore.map((x) => x.toFixed(2)).join(' ')} before, ${loadAfter.map((x) => x.toFixed(2)).join(' ')} after\n`,
);

writeResult('import', {
  description:
    "import('evenlb') vs import('undici'): fresh Node processes, alternating, each timing one dynamic import (hrtime); medians",
  runs: RUNS,
  loadAverageBefore: loadBefore,
  loadAverageAfter: loadAfter,
  targetRatio: TARGET_RATIO,
  ratio,
  processRatio,
  figures,
});
