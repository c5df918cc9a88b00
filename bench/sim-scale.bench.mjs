// Simulator at fleet scale: 1,000,000 connections over 10,000 pods from 10,000 clients, 10 M
// requests, through kube-proxy iptables and evenlb least-request (100 balancer replicas: 10,000
// per-client balancers over 10,000 endpoints would be 10^8 load records, which `evenlb sim`
// refuses above its limit of 4,000,000; and one shared balancer). The full case runs as
// a child process under `/usr/bin/time -v` for wall time, CPU time and peak RSS (targets: < 60 s,
// < 2 GiB). The curve runs the same shape at 1/8, 1/4 and 1/2 of the size in-process and reports
// CPU time per request and per connection, which stay flat if cost is linear. Imports dist/.
// Usage: node bench/sim-scale.bench.mjs [--quick] (quick: 1/64..1/16 and a 1/8 "full" case)
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseScenario, resolveDataplanes, runScenario } from '../dist/sim/index.js';
import { printTable, writeResult } from './machine.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const dataplanes = ['iptables', 'evenlb:least-request'];
const FULL = { pods: 10_000, clients: 10_000, connections: 1_000_000, ratePerSecond: 100, windowMs: 10_000 };

/** The full shape scaled by `f` in connections and requests (pods and clients stay). */
function shape(f) {
  return { ...FULL, connections: Math.round(FULL.connections * f), windowMs: FULL.windowMs * f };
}

function scenario(s) {
  return parseScenario(
    {
      name: 'scale',
      pods: { count: s.pods, workers: 1 },
      clients: {
        count: s.clients,
        connections: s.connections,
        arrival: { type: 'poisson', ratePerSecond: s.ratePerSecond },
        balancers: 100,
      },
      measure: { from: 'start', windowMs: s.windowMs },
    },
    'scale',
  );
}

const rows = [];
const curve = [];
const fractions = quick ? [1 / 64, 1 / 32, 1 / 16] : [1 / 8, 1 / 4, 1 / 2];
for (const f of fractions) {
  const s = shape(f);
  for (const name of dataplanes) {
    globalThis.gc?.();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const report = runScenario({ scenario: scenario(s), dataplanes: resolveDataplanes([name]), seed: 1 });
    const wallMs = performance.now() - t0;
    const c = process.cpuUsage(cpu0);
    const cpuMs = (c.user + c.system) / 1000;
    const r = report.results[0];
    const point = {
      dataplane: name,
      connections: s.connections,
      requests: r.requests.sent,
      events: r.events,
      cpuMs,
      wallMs,
      cpuUsPerRequest: (cpuMs * 1000) / r.requests.sent,
      cpuUsPerConnection: (cpuMs * 1000) / s.connections,
      maxOverMean: r.maxOverMean,
    };
    curve.push(point);
    rows.push({
      run: `${name}, ${(s.connections / 1e3).toFixed(0)}k conns, ${(r.requests.sent / 1e6).toFixed(2)}M req`,
      'cpu s': cpuMs / 1000,
      'wall s': wallMs / 1000,
      'µs/req (cpu)': point.cpuUsPerRequest,
      'Mevents/s (cpu)': r.events / cpuMs / 1000,
    });
  }
}
printTable(rows);

// The full case: a child process under /usr/bin/time -v, once with 100 balancer replicas (each
// its own view of the 10,000 endpoints) and once with one shared balancer (one view, as a proxy
// tier or the single-balancer model gives).
const full = quick ? shape(1 / 8) : FULL;
function runFull(balancers) {
  const args = [
    join(here, '..', 'dist', 'cli', 'main.js'),
    'sim',
    '--scenario',
    'steady',
    '--pods',
    String(full.pods),
    '--connections',
    String(full.connections),
    '--clients',
    String(full.clients),
    '--rate',
    String(full.ratePerSecond),
    '--duration',
    `${full.windowMs}ms`,
    '--balancers',
    String(balancers),
    '--dataplanes',
    dataplanes.join(','),
    '--json',
    '--no-progress',
  ];
  const load = loadavg()[0];
  const child = spawnSync('/usr/bin/time', ['-v', process.execPath, ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  if (child.status !== 0) {
    process.stderr.write(child.stderr);
    process.exit(1);
  }
  const field = (label) => {
    const m = new RegExp(`${label}: (.*)`).exec(child.stderr);
    return m === null ? undefined : m[1].trim();
  };
  const [mm, ss] = (field('Elapsed \\(wall clock\\) time \\(h:mm:ss or m:ss\\)') ?? '0:0').split(':').slice(-2);
  const result = {
    ...full,
    balancers,
    wallS: Number(mm) * 60 + Number(ss),
    cpuS: Number(field('User time \\(seconds\\)')) + Number(field('System time \\(seconds\\)')),
    peakRssMiB: Number(field('Maximum resident set size \\(kbytes\\)')) / 1024,
    loadAverageBefore: load,
    results: JSON.parse(child.stdout).results.map((r) => ({
      dataplane: r.dataplane,
      requests: r.requests.sent,
      events: r.events,
      maxOverMean: r.maxOverMean,
    })),
  };
  process.stdout.write(
    `\nfull case, ${balancers} balancer${balancers === 1 ? '' : 's'} (${full.connections.toLocaleString('en-US')} connections, ` +
      `${full.pods.toLocaleString('en-US')} pods, ${result.results[0].requests.toLocaleString('en-US')} requests × ${dataplanes.join(' + ')}): ` +
      `${result.wallS.toFixed(1)} s wall, ${result.cpuS.toFixed(1)} s CPU, peak RSS ${result.peakRssMiB.toFixed(0)} MiB ` +
      `(targets < 60 s, < 2048 MiB); load average before: ${load.toFixed(1)} on 2 cores\n`,
  );
  return result;
}
const fullResult = runFull(100);
const sharedResult = runFull(1);
if (!quick) writeResult('sim-scale', { curve, full: fullResult, fullOneBalancer: sharedResult });
