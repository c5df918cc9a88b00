// Per-call cost of the `evenlb` grpc-js policy against grpc-js's own `round_robin`, same run.
// 4 grpc-js servers in a child process (their CPU is not counted) on 127.0.0.1; one client
// channel per policy, each warmed up and fully connected first. Each round runs every channel
// (order rotating) for a fixed number of unary calls with a fixed number of concurrent callers;
// the table shows the median of the rounds: calls per second and client CPU per call
// (process.cpuUsage). Target: evenlb throughput >= 0.9 × round_robin's.
// Throughput moves with other load on the machine (see loadAverage1m); CPU per call is steadier.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { evenlbServiceConfig, registerGrpc } from '../dist/grpc/index.js';
import { boundedLoad, median } from './load-tools.mjs';
import { printTable, writeResult } from './machine.mjs';

const CALLS = Number(process.env.GRPC_BENCH_CALLS ?? 6_000);
const CONCURRENCY = Number(process.env.GRPC_BENCH_CONCURRENCY ?? 16);
const ROUNDS = Number(process.env.GRPC_BENCH_ROUNDS ?? 5);
const MAX_RUN_MS = 30_000;
const here = dirname(fileURLToPath(import.meta.url));

const identity = (b) => b;
const service = {
  Unary: {
    path: '/evenlb.bench.Echo/Unary',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
    originalName: 'unary',
  },
};

const serverSource = `
const grpc = require('@grpc/grpc-js');
const identity = (b) => b;
const service = ${JSON.stringify({ path: service.Unary.path })};
const def = { Unary: { path: service.path, requestStream: false, responseStream: false,
  requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity } };
const ports = [];
let pending = 4;
for (let i = 0; i < 4; i++) {
  const server = new grpc.Server();
  server.addService(def, { Unary: (call, cb) => cb(null, call.request) });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    ports.push(port);
    if (--pending === 0) process.stdout.write(ports.join(',') + '\\n');
  });
}
process.on('disconnect', () => process.exit(0));
`;

async function startServers() {
  const child = spawn(process.execPath, ['-e', serverSource], {
    cwd: join(here, '..'),
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const [chunk] = await once(child.stdout, 'data');
  return { child, ports: String(chunk).trim().split(',').map(Number) };
}

const Echo = grpc.makeGenericClientConstructor(service, 'Echo');
const payload = Buffer.from('ping');
const unary = (client) =>
  new Promise((resolve, reject) => client.Unary(payload, (err, reply) => (err ? reject(err) : resolve(reply))));

async function run(client) {
  const cpu0 = process.cpuUsage();
  const { sent, failed, ms } = await boundedLoad({
    count: CALLS,
    concurrency: CONCURRENCY,
    maxMs: MAX_RUN_MS,
    once: () => unary(client),
  });
  const cpu = process.cpuUsage(cpu0);
  return { calls: sent, failed, cps: (sent / ms) * 1000, cpuUsPerCall: (cpu.user + cpu.system) / sent };
}

const loadBefore = loadavg()[0];
const { child, ports } = await startServers();
const evenlb = registerGrpc(grpc);
const addresses = ports.map((p) => `127.0.0.1:${p}`).join(',');
const insecure = grpc.credentials.createInsecure();
const variants = [
  {
    name: 'grpc-js round_robin',
    client: new Echo(`ipv4:///${addresses}`, insecure, {
      'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    }),
  },
  {
    name: 'evenlb round-robin',
    client: new Echo(`static:///${addresses}`, insecure, {
      'grpc.service_config': evenlbServiceConfig({ policy: 'round-robin', name: 'bench-rr' }),
    }),
  },
  {
    name: 'evenlb least-request',
    client: new Echo(`static:///${addresses}`, insecure, {
      'grpc.service_config': evenlbServiceConfig({ policy: 'least-request', name: 'bench-lr' }),
    }),
  },
];
// Warm-up: connect every subchannel and let the JIT settle.
for (const v of variants) for (let i = 0; i < 400; i++) await unary(v.client);
const samples = new Map(variants.map((v) => [v.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < variants.length; i++) {
    const v = variants[(i + round) % variants.length];
    samples.get(v.name).push(await run(v.client));
  }
}
const baseline = median(samples.get('grpc-js round_robin').map((s) => s.cps));
const rows = variants.map((v) => {
  const s = samples.get(v.name);
  const cps = median(s.map((x) => x.cps));
  return {
    channel: v.name,
    callsPerSecond: Math.round(cps),
    cpuUsPerCall: median(s.map((x) => x.cpuUsPerCall)),
    failed: s.reduce((a, x) => a + x.failed, 0),
    throughputRatio: cps / baseline,
  };
});
const spread = evenlb.stats().routes.map((r) => ({ route: r.name, maxOverMean: r.window.imbalance.maxOverMean }));
printTable(rows);
const worst = Math.min(...rows.slice(1).map((r) => r.throughputRatio));
process.stdout.write(
  `evenlb / round_robin throughput: ${rows
    .slice(1)
    .map((r) => `${r.channel} ${r.throughputRatio.toFixed(2)}x`)
    .join(
      ', ',
    )} (target >= 0.9: ${worst >= 0.9 ? 'met' : 'NOT met'}); load average ${loadBefore.toFixed(1)} -> ${loadavg()[0].toFixed(1)}\n`,
);
writeResult('grpc', {
  calls: CALLS,
  concurrency: CONCURRENCY,
  rounds: ROUNDS,
  loadAverage1m: { before: loadBefore, after: loadavg()[0] },
  rows,
  spread,
});
for (const v of variants) v.client.close();
await evenlb.close();
child.disconnect();
