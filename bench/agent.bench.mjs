// BalancedAgent vs a plain undici Pool, through `undici.request`, to one backend.
// The backend runs in a child process so its CPU is not counted. Each round runs both
// clients (order alternating) for a fixed request count with a fixed number of concurrent
// callers; the table shows the median of the rounds (AGENT_BENCH_ROUNDS, default 7): requests
// per second and client CPU per request (process.cpuUsage). The ratios come from pairs of rounds
// (pool first, then the agent first): each pair's ratio is the geometric mean of its two rounds'
// ratios, which cancels the edge the second client of a round has (about 1.15× here), and the
// figure is the median over the pairs (AGENT_BENCH_ROUNDS, default 8: four pairs) — a machine
// whose speed drifts between rounds moves it far less than a ratio of medians. With taskset and two or more cores the
// client runs on the last core and the backend on the others (load-tools' placement;
// EVENLB_BENCH_PIN=0 floats both). Target: BalancedAgent throughput >= 1.0 × Pool's.
// Throughput is sensitive to other load on the machine (see loadAverage1m in the result);
// CPU per request is the steadier figure.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { loadavg } from 'node:os';
import { Pool, request } from 'undici';
import { BalancedAgent, StaticEndpointSource } from '../dist/index.js';
import { boundedLoad, median, PLACEMENT, placed } from './load-tools.mjs';
import { printTable, writeResult } from './machine.mjs';

const REQUESTS = Number(process.env.AGENT_BENCH_REQUESTS ?? 20_000);
const CONCURRENCY = Number(process.env.AGENT_BENCH_CONCURRENCY ?? 16);
const ROUNDS = Number(process.env.AGENT_BENCH_ROUNDS ?? 8);
const MAX_RUN_MS = 30_000;

const backendSource = `
const http = require('node:http');
const server = http.createServer((req, res) => { req.resume(); req.on('end', () => res.end('ok')); });
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.2', () => process.stdout.write(String(server.address().port) + '\\n'));
process.on('disconnect', () => process.exit(0));
`;

async function startBackend() {
  const [bin, args] = placed('load', process.execPath, ['-e', backendSource]);
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const [chunk] = await once(child.stdout, 'data');
  return { child, port: Number(String(chunk).trim()) };
}

async function run(url, dispatcher) {
  const cpu0 = process.cpuUsage();
  const { sent, failed, ms } = await boundedLoad({
    count: REQUESTS,
    concurrency: CONCURRENCY,
    maxMs: MAX_RUN_MS,
    once: async () => {
      const res = await request(url, { dispatcher });
      await res.body.text();
    },
  });
  const cpu = process.cpuUsage(cpu0);
  return { requests: sent, failed, rps: (sent / ms) * 1000, cpuUsPerRequest: (cpu.user + cpu.system) / sent };
}

const loadBefore = loadavg()[0];
// The client's threads (main and libuv's) on the client core, before the backend starts.
if (PLACEMENT !== undefined)
  execFileSync('taskset', ['-a', '-cp', PLACEMENT.proxy, String(process.pid)], { stdio: 'ignore' });
const { child, port } = await startBackend();
const origin = `http://127.0.0.2:${port}`;
const pool = new Pool(origin);
const agent = new BalancedAgent({
  routes: { 'backend.bench.svc:80': new StaticEndpointSource([{ address: '127.0.0.2', port }]) },
});
const clients = {
  pool: { url: `${origin}/`, dispatcher: pool },
  'balanced-agent': { url: 'http://backend.bench.svc/', dispatcher: agent },
};

// Warm-up: JIT and connections.
for (const c of Object.values(clients)) {
  for (let i = 0; i < 2_000; i++) await (await request(c.url, { dispatcher: c.dispatcher })).body.text();
}

const results = { pool: [], 'balanced-agent': [] };
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? ['pool', 'balanced-agent'] : ['balanced-agent', 'pool'];
  for (const name of order) {
    globalThis.gc?.();
    results[name].push(await run(clients[name].url, clients[name].dispatcher));
  }
}

const summary = Object.fromEntries(
  Object.entries(results).map(([name, runs]) => [
    name,
    {
      rps: median(runs.map((r) => r.rps)),
      cpuUsPerRequest: median(runs.map((r) => r.cpuUsPerRequest)),
      failed: runs.reduce((n, r) => n + r.failed, 0),
      runs,
    },
  ]),
);
const perRound = (field) => results.pool.map((p, i) => results['balanced-agent'][i][field] / p[field]);
const perPair = (field) => {
  const r = perRound(field);
  return Array.from({ length: Math.floor(r.length / 2) }, (_, i) => Math.sqrt(r[2 * i] * r[2 * i + 1]));
};
const ratio = median(perPair('rps'));
const cpuRatio = median(perPair('cpuUsPerRequest'));

printTable(
  Object.entries(summary).map(([name, s]) => ({
    client: name,
    'requests/s': Math.round(s.rps),
    'client CPU µs/req': s.cpuUsPerRequest,
    failed: s.failed,
  })),
);
process.stdout.write(
  `\nthroughput ratio balanced-agent / pool (median over pairs of rounds): ${ratio.toFixed(3)} (target >= 1.0) — ${ratio >= 1.0 ? 'met' : 'NOT met'}\n` +
    `  per round: ${perRound('rps')
      .map((r) => r.toFixed(3))
      .join(' ')}\n` +
    `CPU per request ratio balanced-agent / pool: ${cpuRatio.toFixed(3)} (per round: ${perRound('cpuUsPerRequest')
      .map((r) => r.toFixed(3))
      .join(' ')})\n` +
    `placement: ${PLACEMENT === undefined ? 'floating' : `client on core ${PLACEMENT.proxy}, backend on ${PLACEMENT.load}`}\n`,
);

writeResult('agent', {
  benchmark: 'BalancedAgent vs undici Pool through undici.request, one loopback backend in a child process',
  requestsPerRound: REQUESTS,
  concurrency: CONCURRENCY,
  rounds: ROUNDS,
  statistic:
    'median of rounds; ratios: median over pairs of rounds (pool first, agent first) of the geometric mean of the pair',
  placement: PLACEMENT === undefined ? 'floating' : { client: PLACEMENT.proxy, backend: PLACEMENT.load },
  perRoundThroughputRatios: perRound('rps'),
  perPairThroughputRatios: perPair('rps'),
  perRoundCpuRatios: perRound('cpuUsPerRequest'),
  results: summary,
  throughputRatio: ratio,
  cpuPerRequestRatio: cpuRatio,
  target: { throughputRatio: 1.0, met: ratio >= 1.0 },
  // Other work on the machine skews throughput far more than CPU per request; recorded to judge a run.
  loadAverage1m: { before: loadBefore, after: loadavg()[0] },
});

await agent.close();
await pool.close();
child.kill();
