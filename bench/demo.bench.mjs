// The demo's figures as a kept result: one default `evenlb demo` run (every phase, one seed)
// and, for the sidecar phase's goal, `--phases sidecar` over seeds 1–3 — each through real
// kube-proxy iptables rules when the machine allows (root, iptables, ip netns), on loopback
// otherwise. The README's demo table and the sidecar's goal figures come from this file, with
// the load average before and after each run (every request crosses several processes, so a
// busy machine drives less than the nominal load; the file says how much was driven).
//
// Run: npm run bench -- demo   (EVENLB_BENCH_DEMO_SEEDS=1,2,3 for the sidecar seeds)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { printTable, writeResult } from './machine.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const SEEDS = (process.env.EVENLB_BENCH_DEMO_SEEDS ?? '1,2,3').split(',').map(Number);
/** The demo's defaults: 20 clients × 80 requests/s for 11 s per phase. */
const NOMINAL_REQUESTS = 20 * 80 * 11;
const dir = mkdtempSync(join(tmpdir(), 'evenlb-bench-demo-'));

function netfilterPossible() {
  if (process.getuid?.() !== 0) return false;
  return ['iptables', 'ip'].every((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0);
}
const dataplane = netfilterPossible() ? 'netfilter' : 'loopback';

/** One demo run; returns its phases with the load average around it. */
function run(label, args) {
  const json = join(dir, `${label}.json`);
  const before = loadavg()[0];
  const r = spawnSync(
    process.execPath,
    [
      join(repo, 'dist/cli/main.js'),
      'demo',
      ...args,
      '--json',
      json,
      '--output',
      join(dir, `${label}.html`),
      '--progress',
      'none',
    ],
    { cwd: repo, encoding: 'utf8', timeout: 600_000 },
  );
  if (r.status !== 0) throw new Error(`evenlb demo ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`);
  const after = loadavg()[0];
  const phases = JSON.parse(readFileSync(json, 'utf8')).phases.map((p) => ({
    id: p.id,
    dataplane: p.dataplane,
    maxOverMean: p.maxOverMean,
    cov: p.cov,
    newPodShareOfFair: p.newPodShareOfFair,
    okRequests: p.okRequests,
    failedRequests: p.failedRequests,
    drivenShareOfNominal: (p.okRequests + p.failedRequests) / NOMINAL_REQUESTS,
  }));
  return { label, args, loadAverage: [before, after], phases };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  const full = run('default', ['--dataplane', dataplane]);
  const sidecar = SEEDS.map((seed) =>
    run(`sidecar-seed-${seed}`, ['--phases', 'sidecar', '--dataplane', dataplane, '--seed', String(seed)]),
  );
  const sidecarPhases = sidecar.map((s) => s.phases[0]);
  const goal = {
    seeds: SEEDS,
    dataplane,
    medianMaxOverMean: median(sidecarPhases.map((p) => p.maxOverMean)),
    medianNewPodShareOfFair: median(sidecarPhases.map((p) => p.newPodShareOfFair)),
    failedRequests: sidecarPhases.reduce((n, p) => n + p.failedRequests, 0),
    target: { maxOverMean: 1.15, newPodShareOfFair: 0.9, failedRequests: 0 },
  };
  goal.met = goal.medianMaxOverMean <= 1.15 && goal.medianNewPodShareOfFair >= 0.9 && goal.failedRequests === 0;
  printTable(
    [
      ...full.phases.map((p) => ({ run: 'default', ...p })),
      ...sidecar.map((s, i) => ({ run: `seed ${SEEDS[i]}`, ...s.phases[0] })),
    ].map((p) => ({
      run: p.run,
      phase: p.id,
      maxOverMean: p.maxOverMean,
      newPodOfFair: p.newPodShareOfFair,
      failed: p.failedRequests,
      requests: p.okRequests + p.failedRequests,
      drivenOfNominal: p.drivenShareOfNominal,
    })),
  );
  process.stdout.write(
    `sidecar over seeds ${SEEDS.join(', ')} (${dataplane}): median max/mean ${goal.medianMaxOverMean.toFixed(2)}, ` +
      `new pod ${(goal.medianNewPodShareOfFair * 100).toFixed(0)}% of fair, failed ${goal.failedRequests} — goal ${goal.met ? 'met' : 'not met'}\n`,
  );
  writeResult('demo', {
    dataplane,
    nominalRequestsPerPhase: NOMINAL_REQUESTS,
    default: full,
    sidecar,
    sidecarGoal: goal,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
