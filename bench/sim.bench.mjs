// Simulator throughput: events per second of the bare event queue (the baseline), of the
// scheduler loop, and of full simulations — including the scale target: 1,000 pods, 10,000
// connections and 10 million requests. Wall time and CPU time are both reported (CPU time is
// what the simulator itself cost when the machine is shared). Imports the built package.
// Usage: node bench/sim.bench.mjs [--quick]

import { SeededRandom } from '../dist/index.js';
import { EventQueue, parseScenario, resolveDataplanes, runScenario, Scheduler } from '../dist/sim/index.js';
import { printTable, writeResult } from './machine.mjs';

const quick = process.argv.includes('--quick');
const scale = quick ? 0.1 : 1;

function measure(fn) {
  globalThis.gc?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const events = fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  return { events, wallMs, cpuMs };
}

/** Hold model: `pending` events waiting, each pop schedules one more at an exponential gap. */
function bareQueue(total, pending) {
  const q = new EventQueue();
  const r = new SeededRandom(1);
  for (let i = 0; i < pending; i++) q.push(-Math.log(1 - r.next()), 0, i, 0);
  for (let i = 0; i < total; i++) {
    q.pop();
    q.push(q.time - Math.log(1 - r.next()), 0, q.a, 0);
  }
  return total;
}

function schedulerLoop(total, pending) {
  const s = new Scheduler();
  const r = new SeededRandom(1);
  let left = total;
  const kind = s.register((a) => {
    if (--left > 0) s.after(-Math.log(1 - r.next()), kind, a);
  });
  for (let i = 0; i < pending; i++) s.after(-Math.log(1 - r.next()), kind, i);
  s.runUntil(Number.POSITIVE_INFINITY);
  return s.processed;
}

function scaleScenario(requests) {
  // 100 clients × 1,000 req/s = 100,000 req/s over 1,000 pods; the window sets the count.
  return parseScenario(
    {
      name: 'scale',
      pods: { count: 1000, workers: 8, serviceTime: { type: 'exponential', meanMs: 5 } },
      clients: { count: 100, connections: 10_000, arrival: { type: 'poisson', ratePerSecond: 1000 } },
      bucketMs: 10_000,
      measure: { from: 'start', windowMs: (requests / 100_000) * 1000 },
    },
    'scale',
  );
}

function simulate(scenario, dataplane) {
  const report = runScenario({ scenario, dataplanes: resolveDataplanes([dataplane]), seed: 1 });
  const r = report.results[0];
  return { events: r.events, requests: r.requests.sent, maxOverMean: r.maxOverMean };
}

const rows = [];
const results = {};

const queueEvents = Math.round(10_000_000 * scale);
const base = measure(() => bareQueue(queueEvents, 10_000));
const baseRate = base.events / (base.cpuMs / 1000);
rows.push({
  run: 'event queue (hold, 10k pending)',
  events: base.events,
  'wall s': base.wallMs / 1000,
  'cpu s': base.cpuMs / 1000,
  'Mevents/s (cpu)': baseRate / 1e6,
  'vs queue': 1,
});
results.eventQueue = { ...base, eventsPerSecond: baseRate };

const loop = measure(() => schedulerLoop(queueEvents, 10_000));
const loopRate = loop.events / (loop.cpuMs / 1000);
rows.push({
  run: 'scheduler loop (handler per event)',
  events: loop.events,
  'wall s': loop.wallMs / 1000,
  'cpu s': loop.cpuMs / 1000,
  'Mevents/s (cpu)': loopRate / 1e6,
  'vs queue': loopRate / baseRate,
});
results.schedulerLoop = { ...loop, eventsPerSecond: loopRate };

const runs = [
  { name: 'iptables', requests: 10_000_000 },
  { name: 'evenlb:least-request', requests: 10_000_000 },
  { name: 'evenlb:round-robin', requests: 2_000_000 },
  { name: 'evenlb:peak-ewma', requests: 2_000_000 },
  { name: 'apiserver-legacy', requests: 2_000_000 },
];
results.scale = [];
for (const run of runs) {
  const requests = Math.round(run.requests * scale);
  const scenario = scaleScenario(requests);
  let detail;
  const m = measure(() => {
    detail = simulate(scenario, run.name);
    return detail.events;
  });
  const rate = m.events / (m.cpuMs / 1000);
  rows.push({
    run: `1000 pods, 10k conns, ${(detail.requests / 1e6).toFixed(1)}M req: ${run.name}`,
    events: m.events,
    'wall s': m.wallMs / 1000,
    'cpu s': m.cpuMs / 1000,
    'Mevents/s (cpu)': rate / 1e6,
    'vs queue': rate / baseRate,
  });
  results.scale.push({ dataplane: run.name, ...detail, ...m, eventsPerSecond: rate });
}

const trials = Math.round(5000 * scale);
const rc = parseScenario(
  {
    name: 'random-connections',
    trials,
    pods: { count: 4 },
    clients: { connections: 8, arrival: { type: 'periodic', ratePerSecond: 2, count: 1 } },
    measure: { from: 'start' },
  },
  'random-connections',
);
let rcResult;
const rcm = measure(() => {
  rcResult = simulate(rc, 'iptables');
  return rcResult.events;
});
rows.push({
  run: `random-connections K=4 C=8, ${trials} trials: iptables`,
  events: rcm.events,
  'wall s': rcm.wallMs / 1000,
  'cpu s': rcm.cpuMs / 1000,
  'Mevents/s (cpu)': rcm.events / (rcm.cpuMs / 1000) / 1e6,
  'vs queue': rcm.events / (rcm.cpuMs / 1000) / baseRate,
});
results.randomConnections = { trials, ...rcResult, ...rcm, trialsPerSecond: trials / (rcm.cpuMs / 1000) };

printTable(rows);
const tenM = results.scale.find((s) => s.dataplane === 'iptables');
process.stdout.write(
  `\n10M-request run (iptables): ${(tenM.wallMs / 1000).toFixed(1)} s wall, ${(tenM.cpuMs / 1000).toFixed(1)} s CPU` +
    ` (target < 30 s); full sim at ${(tenM.eventsPerSecond / baseRate).toFixed(2)}× the bare queue's event rate\n`,
);
if (!quick) writeResult('sim', { quick, results });
