// A/B of `evenlb proxy` CPU per request between two built trees (each with its own dist/), under
// the same wrk load: both proxies run at once on the proxy core (the idle one costs nothing), and
// rounds alternate A, B, A, B … so that background load on a shared machine falls on both alike.
// With --together, each round loads both proxies at the same time instead (one wrk each, both
// proxies sharing the proxy core): on a busy machine the two then see exactly the same
// conditions, which alternating rounds only approximate. Per round: CPU µs per request of each
// ((utime + stime) from /proc/<pid>/stat ÷ requests) and the ratio B/A; then the medians. With --cpu-prof DIR, each proxy writes a V8 CPU profile into
// DIR/a and DIR/b when it exits, sampled every 200 µs (compare them with bench/cpu-profile-diff.mjs).
//
// Usage: node bench/proxy-ab.mjs A_ROOT B_ROOT [--rounds 6] [--seconds 5] [--connections 8]
//        [--together] [--cpu-prof DIR]
// Not a *.bench.mjs file: `npm run bench` does not run it; it is a tool for changes to the proxy.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuMicros, median, PLACEMENT, startBackends, startEvenlbProxy, stop, wrk, wrkAsync } from './load-tools.mjs';
import { printTable } from './machine.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '8' },
    together: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
  },
});
if (positionals.length !== 2) {
  process.stderr.write('usage: node bench/proxy-ab.mjs A_ROOT B_ROOT [--rounds N] [--seconds S] [--connections C]\n');
  process.exit(2);
}
const positive = (name) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`--${name}: expected a positive integer, received ${JSON.stringify(values[name])}\n`);
    process.exit(2);
  }
  return n;
};
const ROUNDS = positive('rounds');
const SECONDS = positive('seconds');
const CONNECTIONS = positive('connections');
const roots = positionals.map((p) => resolve(p));
const profDir = values['cpu-prof'] === undefined ? undefined : resolve(values['cpu-prof']);

const BACKEND_ADDRS = ['127.0.0.101', '127.0.0.102', '127.0.0.103', '127.0.0.104'];

async function main() {
  process.stdout.write(
    `A = ${roots[0]}\nB = ${roots[1]}\n${ROUNDS} rounds × ${SECONDS} s at ${CONNECTIONS} connections, ` +
      `${values.together ? 'A and B loaded together' : 'A then B'}; ` +
      `placement: ${PLACEMENT === undefined ? 'unpinned' : `proxies on core ${PLACEMENT.proxy}, load on ${PLACEMENT.load}`}\n`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'evenlb-bench-ab-'));
  const backends = await startBackends(dir, BACKEND_ADDRS);
  const proxies = [];
  try {
    for (const [i, name] of ['a', 'b'].entries()) {
      let nodeArgs = [];
      if (profDir !== undefined) {
        mkdirSync(join(profDir, name), { recursive: true });
        nodeArgs = ['--cpu-prof', '--cpu-prof-interval=200', `--cpu-prof-dir=${join(profDir, name)}`];
      }
      proxies.push({ name, ...(await startEvenlbProxy(dir, roots[i], backends.endpoints, { name, nodeArgs })) });
    }
    for (const p of proxies) wrk({ port: p.port, connections: CONNECTIONS, seconds: 2, hostHeader: 'bench.local' });
    const rows = [];
    for (let r = 0; r < ROUNDS; r++) {
      const row = { round: r + 1 };
      const load = { connections: CONNECTIONS, seconds: SECONDS, hostHeader: 'bench.local' };
      const note = (p, w, cpuUs) => {
        if (w.errors > 0) process.stdout.write(`round ${r + 1} ${p.name}: ${w.errors} errors\n`);
        row[`${p.name}UsPerReq`] = cpuUs / w.requests;
        row[`${p.name}Rps`] = w.rps;
      };
      if (values.together) {
        const before = proxies.map((p) => cpuMicros(p.pid));
        const runs = await Promise.all(proxies.map((p) => wrkAsync({ port: p.port, ...load })));
        for (const [i, p] of proxies.entries()) note(p, runs[i], cpuMicros(p.pid) - before[i]);
      } else {
        for (const p of proxies) {
          const before = cpuMicros(p.pid);
          const w = wrk({ port: p.port, ...load });
          note(p, w, cpuMicros(p.pid) - before);
        }
      }
      row.ratioBtoA = row.bUsPerReq / row.aUsPerReq;
      rows.push(row);
      process.stdout.write(
        `round ${r + 1}: A ${row.aUsPerReq.toFixed(1)} µs/req, B ${row.bUsPerReq.toFixed(1)} µs/req, B/A ${row.ratioBtoA.toFixed(3)}\n`,
      );
    }
    printTable(rows);
    const col = (k) => median(rows.map((x) => x[k]));
    printTable([
      {
        medianAUsPerReq: col('aUsPerReq'),
        medianBUsPerReq: col('bUsPerReq'),
        medianRatioBtoA: col('ratioBtoA'),
        loadavg: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
      },
    ]);
  } finally {
    // SIGTERM lets each proxy exit cleanly, so --cpu-prof writes its profile.
    for (const p of proxies) await stop(p.child);
    await stop(backends.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
