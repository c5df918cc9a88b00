// Proxy benchmark: CPU per request, throughput and latency of `evenlb proxy` against direct
// access, nginx, HAProxy, the floor of a proxy on Node's sockets (`nodeFloor`), a minimal undici
// `Pool.stream` proxy and @fastify/reply-from, all in
// the same run, all balancing keep-alive round robin (or evenlb's default policy) over the same
// 4 loopback backends. Load: wrk, HTTP/1.1 keep-alive, 8 and 64 connections, 5 s per run, the
// median of 3 runs, interleaved across targets. CPU per request = (utime + stime of the proxy process, from
// /proc/<pid>/stat) / requests. Missing tools (wrk, nginx, haproxy) are installed with apt-get
// when running as root. Results: a table, ratios, and bench/results/proxy.json.
//
// CPU placement (load-tools.mjs): with taskset and two or more cores, every proxy under test runs
// on the last core and wrk and the backends on the others, so a proxy's CPU per request is its
// own work, not the cost of being descheduled for the load generator on a shared core. Each
// target gets the same placement. EVENLB_BENCH_PIN=0 turns it off (everything floats, as before).
//
// EVENLB_BENCH_LOAD_REPORT=1 adds `evenlbLoadReport`: the same proxy with `listeners[].loadReport`
// on (every response reported), and prints what reporting costs per request against `evenlb` in
// the same rounds; its results go to bench/results/proxy-load-report.json, not proxy.json.
// EVENLB_BENCH_TARGETS=a,b runs only those targets (e.g. evenlb,evenlbLoadReport).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cpuMicros,
  ensureTools,
  freePort,
  have,
  median,
  nginxConfig,
  PLACEMENT,
  start,
  startBackends,
  startEvenlbProxy,
  stop,
  toolPath,
  waitForPort,
  wrk as wrkRun,
} from './load-tools.mjs';
import { printTable, writeResult } from './machine.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const RUN_SECONDS = Number(process.env.EVENLB_BENCH_SECONDS ?? 5);
const RUNS = Number(process.env.EVENLB_BENCH_RUNS ?? 3);
const CONNECTIONS = [8, 64];
/** The budget: evenlb's CPU per request at most this many times nginx's, in the same run. */
const CPU_TARGET = 1.6;
/** Also measure a proxy listener reporting its load (`evenlbLoadReport`). */
const LOAD_REPORT = process.env.EVENLB_BENCH_LOAD_REPORT === '1';
/** Only these targets, when set. */
const ONLY = process.env.EVENLB_BENCH_TARGETS?.split(',').map((t) => t.trim());

/** One wrk run against a target, latencies in ms as this benchmark reports them. */
function wrk(port, connections, host = '127.0.0.1') {
  const w = wrkRun({ port, host, connections, seconds: RUN_SECONDS, hostHeader: 'bench.local' });
  return { requests: w.requests, rps: w.rps, p50Ms: w.p50Us / 1000, p99Ms: w.p99Us / 1000, errors: w.errors };
}

/** A proxy written as a Node script (the Node baselines): written to `dir/file`, started, listening on `port`. */
async function nodeProxy(dir, file, port, source) {
  const script = join(dir, file);
  writeFileSync(script, source);
  const child = start(process.execPath, [script]);
  await waitForPort(port);
  return { port, pid: child.pid, child };
}

// Backends: one child process serving 4 loopback addresses (a tiny fixed body).
const BACKEND_ADDRS = ['127.0.0.101', '127.0.0.102', '127.0.0.103', '127.0.0.104'];

const targets = {
  async direct(_dir, endpoints) {
    const [host, port] = endpoints[0].split(':');
    return { port: Number(port), host, pid: undefined, child: undefined };
  },
  evenlb: (dir, endpoints) => startEvenlbProxy(dir, root, endpoints),
  async evenlbLoadReport(dir, endpoints) {
    if (!LOAD_REPORT) return undefined;
    const loadPort = await freePort();
    const listenerExtra = `, loadReport: { loadPort: ${loadPort}, loadHost: "127.0.0.1", maxInFlight: 64 }`;
    return startEvenlbProxy(dir, root, endpoints, { name: 'evenlb-load-report', listenerExtra });
  },
  async nginx(dir, endpoints) {
    const bin = toolPath('nginx');
    if (bin === undefined) return undefined;
    const port = await freePort();
    const conf = join(dir, 'nginx.conf');
    writeFileSync(conf, nginxConfig(dir, { port, upstreams: endpoints, keepalive: 128 }));
    const child = start(bin, ['-c', conf, '-p', dir]);
    await waitForPort(port);
    return { port, pid: child.pid, child };
  },
  async haproxy(dir, endpoints) {
    const bin = toolPath('haproxy');
    if (bin === undefined) return undefined;
    const port = await freePort();
    const conf = join(dir, 'haproxy.cfg');
    writeFileSync(
      conf,
      `global
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
frontend web
  bind 127.0.0.1:${port}
  default_backend backends
backend backends
  balance roundrobin
  http-reuse always
${endpoints.map((e, i) => `  server b${i} ${e}`).join('\n')}
`,
    );
    const child = start(bin, ['-db', '-f', conf]);
    await waitForPort(port);
    return { port, pid: child.pid, child };
  },
  async undiciPool(dir, endpoints) {
    const port = await freePort();
    return nodeProxy(
      dir,
      'undici-proxy.mjs',
      port,
      `import http from 'node:http';
import { Pool } from ${JSON.stringify(join(root, 'node_modules', 'undici', 'index.js'))};
const pools = ${JSON.stringify(endpoints)}.map((e) => new Pool('http://' + e, { connections: 128 }));
let i = 0;
http.createServer((req, res) => {
  const pool = pools[i++ % pools.length];
  pool.stream({ path: req.url, method: req.method, headers: req.headers, body: req.method === 'GET' || req.method === 'HEAD' ? null : req },
    ({ statusCode, headers }) => { res.writeHead(statusCode, headers); return res; },
    (err) => { if (err) { res.statusCode = 502; res.end(); } });
}).listen(${port}, '127.0.0.1');
`,
    );
  },
  // The floor for any proxy written on Node's sockets: keep-alive round robin that finds the head's
  // end and Content-Length and nothing else (no validation, no header rewriting, no balancing
  // state). Not a usable proxy; it shows how much of the distance to nginx is Node itself.
  async nodeFloor(dir, endpoints) {
    const port = await freePort();
    return nodeProxy(
      dir,
      'node-floor.mjs',
      port,
      `import net from 'node:net';
const pools = ${JSON.stringify(endpoints)}.map((e) => ({ host: e.split(':')[0], port: Number(e.split(':')[1]), idle: [] }));
let i = 0;
function socketFor(pool) {
  const idle = pool.idle.pop();
  if (idle !== undefined) return idle;
  const s = net.connect({ host: pool.host, port: pool.port, noDelay: true });
  s.on('data', (chunk) => s.onChunk(chunk));
  s.on('error', () => {});
  return s;
}
net.createServer({ noDelay: true }, (client) => {
  client.on('error', () => {});
  client.on('data', (buf) => {
    const end = buf.indexOf('\\r\\n\\r\\n');
    if (end < 0) return;
    const pool = pools[i++ % pools.length];
    const up = socketFor(pool);
    up.write(buf.toString('latin1', 0, end) + '\\r\\nx-forwarded-for: ' + client.remoteAddress + '\\r\\n\\r\\n', 'latin1');
    let need = -1;
    let got = 0;
    up.onChunk = (chunk) => {
      if (need < 0) {
        const headEnd = chunk.indexOf('\\r\\n\\r\\n');
        const m = /content-length: *(\\d+)/i.exec(chunk.toString('latin1', 0, headEnd));
        need = headEnd + 4 + Number(m?.[1] ?? 0);
      }
      got += chunk.length;
      client.write(chunk);
      if (got >= need) pool.idle.push(up);
    };
  });
}).listen(${port}, '127.0.0.1');
`,
    );
  },
  async replyFrom(dir, endpoints) {
    const port = await freePort();
    const req = (m) => JSON.stringify(join(root, 'node_modules', m));
    return nodeProxy(
      dir,
      'reply-from.mjs',
      port,
      `import { createRequire } from 'node:module';
const require = createRequire(${JSON.stringify(join(root, 'package.json'))});
const Fastify = require('fastify');
const replyFrom = require('@fastify/reply-from');
void ${req('fastify')};
const bases = ${JSON.stringify(endpoints)}.map((e) => 'http://' + e);
let i = 0;
const app = Fastify({ logger: false });
await app.register(replyFrom, { base: bases[0], undici: { connections: 128 } });
app.all('/*', (request, reply) => {
  reply.from(request.url, { getUpstream: () => bases[i++ % bases.length] });
});
await app.listen({ port: ${port}, host: '127.0.0.1' });
`,
    );
  },
};

async function main() {
  ensureTools(['wrk', 'nginx', 'haproxy']);
  process.stdout.write(
    PLACEMENT === undefined
      ? 'placement: unpinned (every process floats over all cores)\n'
      : `placement: proxies on core ${PLACEMENT.proxy}, wrk and backends on core(s) ${PLACEMENT.load}\n`,
  );
  if (!have('wrk')) {
    process.stdout.write('wrk is not installed: proxy benchmark skipped\n');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'evenlb-bench-proxy-'));
  const backends = await startBackends(dir, BACKEND_ADDRS);
  const rows = [];
  // Every target runs at once (idle ones cost nothing); runs are interleaved round by round so
  // that background load on the machine affects every target alike.
  const running = [];
  const samples = new Map();
  try {
    for (const [name, make] of Object.entries(targets)) {
      if (ONLY !== undefined && !ONLY.includes(name)) continue;
      const t = await make(dir, backends.endpoints);
      if (t === undefined) process.stdout.write(`${name}: not available, skipped\n`);
      else running.push({ name, ...t });
    }
    for (const t of running) wrk(t.port, 8, t.host); // warm-up (JIT, connection pools)
    for (let r = 0; r < RUNS; r++) {
      for (const c of CONNECTIONS) {
        for (const t of running) {
          const before = t.pid === undefined ? 0 : cpuMicros(t.pid);
          const w = wrk(t.port, c, t.host);
          const after = t.pid === undefined ? 0 : cpuMicros(t.pid);
          const key = `${t.name} ${c}`;
          if (!samples.has(key)) samples.set(key, []);
          samples
            .get(key)
            .push({ ...w, cpuUsPerReq: t.pid === undefined ? Number.NaN : (after - before) / w.requests });
          process.stdout.write(`round ${r + 1} ${t.name} c=${c}: ${w.rps.toFixed(0)} req/s\n`);
        }
      }
    }
    for (const t of running) {
      for (const c of CONNECTIONS) {
        const runs = samples.get(`${t.name} ${c}`) ?? [];
        rows.push({
          target: t.name,
          connections: c,
          rps: median(runs.map((x) => x.rps)),
          cpuUsPerReq: median(runs.map((x) => x.cpuUsPerReq)),
          p50Ms: median(runs.map((x) => x.p50Ms)),
          p99Ms: median(runs.map((x) => x.p99Ms)),
          errors: runs.reduce((a, x) => a + x.errors, 0),
        });
      }
      if (t.child !== undefined && t.child.exitCode !== null) {
        process.stdout.write(`${t.name} exited early: ${t.child.errText()}\n`);
      }
    }
  } finally {
    for (const t of running) if (t.child !== undefined) await stop(t.child);
    await stop(backends.child);
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(rows);
  const find = (target, c) => rows.find((r) => r.target === target && r.connections === c);
  const ratios = [];
  for (const c of CONNECTIONS) {
    const e = find('evenlb', c);
    if (e === undefined) continue;
    for (const base of ['nginx', 'haproxy', 'nodeFloor', 'undiciPool', 'replyFrom', 'direct']) {
      const b = find(base, c);
      if (b === undefined) continue;
      ratios.push({
        connections: c,
        baseline: base,
        cpuPerReqRatio: Number.isFinite(b.cpuUsPerReq) ? e.cpuUsPerReq / b.cpuUsPerReq : Number.NaN,
        throughputRatio: e.rps / b.rps,
      });
    }
  }
  process.stdout.write('\nevenlb relative to each baseline (cpu: lower is better; throughput: higher is better)\n');
  printTable(ratios);
  const targetsMet = CONNECTIONS.map((c) => {
    const n = ratios.find((r) => r.connections === c && r.baseline === 'nginx');
    const f = ratios.find((r) => r.connections === c && r.baseline === 'replyFrom');
    // The same ratio taken round by round (evenlb and nginx measured minutes apart at most), then the median.
    const e = samples.get(`evenlb ${c}`) ?? [];
    const g = samples.get(`nginx ${c}`) ?? [];
    const perRound = e.map((x, i) => x.cpuUsPerReq / (g[i]?.cpuUsPerReq ?? Number.NaN));
    return {
      connections: c,
      cpuVsNginx: n?.cpuPerReqRatio,
      cpuVsNginxByRound: perRound.map((r) => Number(r.toFixed(2))).join(' / '),
      cpuTarget: CPU_TARGET,
      cpuMet: n === undefined ? undefined : n.cpuPerReqRatio <= CPU_TARGET,
      throughputVsReplyFrom: f?.throughputRatio,
      throughputTarget: 1.5,
      throughputMet: f === undefined ? undefined : f.throughputRatio >= 1.5,
    };
  });
  printTable(targetsMet.map((t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, v ?? 'n/a']))));
  if (LOAD_REPORT) {
    // What reporting costs: the reporting proxy against the plain one, round by round, then the median.
    const cost = CONNECTIONS.map((c) => {
      const e = samples.get(`evenlb ${c}`) ?? [];
      const l = samples.get(`evenlbLoadReport ${c}`) ?? [];
      return {
        connections: c,
        plainCpuUsPerReq: find('evenlb', c)?.cpuUsPerReq,
        reportingCpuUsPerReq: find('evenlbLoadReport', c)?.cpuUsPerReq,
        addedUsPerReq: median(l.map((x, i) => x.cpuUsPerReq - (e[i]?.cpuUsPerReq ?? Number.NaN))),
        cpuRatio: median(l.map((x, i) => x.cpuUsPerReq / (e[i]?.cpuUsPerReq ?? Number.NaN))),
        throughputRatio: median(l.map((x, i) => x.rps / (e[i]?.rps ?? Number.NaN))),
      };
    });
    process.stdout.write(
      '\nlisteners[].loadReport: reporting proxy against the plain one (medians of per-round figures)\n',
    );
    printTable(cost);
    writeResult('proxy-load-report', { runSeconds: RUN_SECONDS, runs: RUNS, tool: 'wrk -t1 keep-alive', rows, cost });
    return;
  }
  writeResult('proxy', {
    runSeconds: RUN_SECONDS,
    runs: RUNS,
    tool: 'wrk -t1 keep-alive',
    placement: PLACEMENT === undefined ? 'unpinned' : { proxyCores: PLACEMENT.proxy, loadCores: PLACEMENT.load },
    backends: BACKEND_ADDRS.length,
    rows,
    ratios,
    targets: targetsMet,
  });
}

await main();
