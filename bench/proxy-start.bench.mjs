// How long `evenlb proxy` takes from its spawn to accepting connections — what a sidecar adds to
// its pod's start — against a plain node:http server started the same way in the same run (Node's
// own floor for a process that listens). Each sample is a fresh process on a free loopback port,
// polled with TCP connects every 2 ms; the CPU it used until then is read from /proc/PID/stat
// (Linux; left out elsewhere). The two alternate, and which goes first alternates per round, so
// drifting background load falls on both alike. One unrecorded warm-up of each first (disk cache).
//
// Run: npm run bench -- proxy-start   (EVENLB_BENCH_START_RUNS=N for N samples each; default 9)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, median } from './load-tools.mjs';
import { printTable, writeResult } from './machine.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Math.max(1, Number(process.env.EVENLB_BENCH_START_RUNS ?? 9));
const DEADLINE_MS = 30_000;
const TICKS_PER_SECOND = 100;

const COMMANDS = {
  'evenlb proxy': (port) => [
    join(repo, 'dist/cli/main.js'),
    'proxy',
    '--listen',
    `127.0.0.1:${port}`,
    '--upstream',
    'static:///127.0.0.1:9',
  ],
  'node:http server': (port) => [
    '-e',
    `require('node:http').createServer((q, s) => s.end()).listen(${port}, '127.0.0.1')`,
  ],
};

const accepts = (port) =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** One fresh process: { listenMs, cpuMs }. */
async function sample(name) {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, COMMANDS[name](port), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  try {
    for (;;) {
      if (await accepts(port)) break;
      if (exited) throw new Error(`${name} exited before listening: ${stderr}`);
      if (performance.now() - t0 > DEADLINE_MS) throw new Error(`${name} did not listen within ${DEADLINE_MS} ms`);
      await new Promise((r) => setTimeout(r, 2));
    }
    return { listenMs: performance.now() - t0, cpuMs: cpuMs(child.pid) };
  } finally {
    child.kill('SIGKILL');
    if (!exited) await new Promise((r) => child.once('exit', r));
  }
}

const names = Object.keys(COMMANDS);
const loadBefore = loadavg();
for (const name of names) await sample(name); // warm-up, not recorded
const samples = Object.fromEntries(names.map((n) => [n, []]));
for (let round = 0; round < RUNS; round++) {
  for (const name of round % 2 === 0 ? names : [...names].reverse()) samples[name].push(await sample(name));
}
const loadAfter = loadavg();

const figures = Object.fromEntries(
  names.map((n) => {
    const listen = samples[n].map((x) => x.listenMs);
    const cpu = samples[n].map((x) => x.cpuMs).filter((x) => x !== undefined);
    return [
      n,
      {
        medianListenMs: median(listen),
        minListenMs: Math.min(...listen),
        maxListenMs: Math.max(...listen),
        ...(cpu.length === 0 ? {} : { medianCpuMs: median(cpu) }),
      },
    ];
  }),
);
printTable(
  names.map((n) => ({
    process: n,
    'median ms': figures[n].medianListenMs,
    'min ms': figures[n].minListenMs,
    'max ms': figures[n].maxListenMs,
    'CPU ms (median)': figures[n].medianCpuMs ?? '-',
  })),
);
const ratio = figures['evenlb proxy'].medianListenMs / figures['node:http server'].medianListenMs;
process.stdout.write(
  `\nevenlb proxy from spawn to listening: ${figures['evenlb proxy'].medianListenMs.toFixed(0)} ms (median of ${RUNS}), ` +
    `${ratio.toFixed(2)}× a plain node:http server's\nload average ${loadBefore.map((x) => x.toFixed(2)).join(' ')} before, ${loadAfter.map((x) => x.toFixed(2)).join(' ')} after\n`,
);
writeResult('proxy-start', {
  description:
    'evenlb proxy (flags, static upstream) from spawn to accepting a TCP connection, vs a plain node:http server',
  runs: RUNS,
  loadAverage: { before: loadBefore, after: loadAfter },
  figures,
  ratioOfMedians: ratio,
});
