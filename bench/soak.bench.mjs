// Soak benchmark: `evenlb proxy` as a real child process under mixed load for 10 minutes
// (`--minutes N` or EVENLB_SOAK_MINUTES for a shorter check), looking for leaks and failures:
// - load (bounded rates): HTTP/1.1 keep-alive clients (4 × 50 req/s), h2c streams on one
//   session (4 × 50 req/s) and a new connection per request (2 × 25 req/s), all to one `http`
//   listener, against 6 loopback HTTP/1.1 upstreams;
// - endpoint churn every 10 s: the cluster's `file:///` endpoints file is rewritten (a window of
//   3 or 4 of the 6 upstreams moving by one: upstreams added and removed; removed ones keep
//   serving what they already have, as a terminating pod does). The window repeats every 60 s,
//   so every minute ends on the same endpoint set;
// - a reload every minute, 30 s into it: the configuration file rewritten with a changed but
//   valid configuration (the cluster's policy and the listener's idle timeout alternate, so
//   both the cluster and the listener are replaced) and SIGHUP.
// Clients behave as well-behaved clients do at a server's graceful close: an HTTP/1.1 request
// that met a kept-alive connection the server had just closed (no response byte, reused socket)
// is sent again once, and an h2 stream refused by GOAWAY is sent again once on a new session;
// both are counted and printed apart from failures. Every other error or non-200 answer fails.
// Per minute: the proxy's RSS (/proc/PID/status) and open file descriptors (/proc/PID/fd), each
// the median of readings every 5 s in that minute (and their max), heap used and event-loop
// delay p50/p99/max (its own /metrics: prom-client's monitorEventLoopDelay gauges, reset at
// every scrape, so each row covers its minute), requests done and failed.
// PASS/FAIL: 0 failed requests; RSS and descriptors of the last minute within 10% of minute 2.
// Result: bench/results/soak.json.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { printTable, writeResult } from './machine.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, '..', 'dist', 'cli', 'main.js');
const argMinutes = process.argv.indexOf('--minutes');
const MINUTES = Number(argMinutes > 0 ? process.argv[argMinutes + 1] : (process.env.EVENLB_SOAK_MINUTES ?? 10));
if (!Number.isFinite(MINUTES) || MINUTES < 1) throw new Error(`--minutes must be a number >= 1; received ${MINUTES}`);
const MINUTE_MS = 60_000;
const CHURN_MS = 10_000;
const RELOAD_AT_MS = 30_000;
const UPSTREAMS = 6;
/** Clients: [kind, loops, requests per second per loop]. */
const CLIENTS = [
  ['h1-keepalive', 4, 50],
  ['h2c', 4, 50],
  ['h1-new-connection', 2, 25],
];
/** A request not answered within this is a failure. */
const REQUEST_TIMEOUT_MS = 10_000;
const TOLERANCE = 0.1;
/** How often RSS and descriptors are read. */
const SAMPLE_MS = 5_000;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startUpstreams() {
  const servers = [];
  for (let i = 0; i < UPSTREAMS; i++) {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`upstream ${i}\n`);
      });
    });
    server.keepAliveTimeout = 30_000;
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    servers.push({ server, port: server.address().port });
  }
  return servers;
}

function writeAtomically(path, text) {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

/** Step k of the churn: a window of 3 or 4 upstreams starting at k mod 6 (period 6 steps). */
function endpointsAt(step, upstreams) {
  const size = 3 + (step % 2);
  const list = [];
  for (let j = 0; j < size; j++) list.push({ address: '127.0.0.1', port: upstreams[(step + j) % UPSTREAMS].port });
  return JSON.stringify(list);
}

function configText(variant, ports, endpointsFile) {
  return [
    `admin: { address: "127.0.0.1:${ports.admin}" }`,
    'logLevel: info',
    'listeners:',
    `  - { name: web, address: "127.0.0.1:${ports.web}", limits: { idleTimeoutMs: ${variant === 0 ? 60_000 : 61_000} } }`,
    'clusters:',
    `  - { name: app, target: "file://${endpointsFile}", policy: ${variant === 0 ? 'least-request' : 'round-robin'} }`,
    '',
  ].join('\n');
}

/** Counts shared by the load loops; `rows` snapshots them per minute. */
const counts = { done: 0, failed: 0, staleRetries: 0, goawayRetries: 0, errors: new Map() };

function fail(kind, what) {
  counts.failed++;
  const key = `${kind}: ${what}`;
  counts.errors.set(key, (counts.errors.get(key) ?? 0) + 1);
}

function h1Request(port, agent) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode }));
      res.once('error', (e) => resolve({ error: e.code ?? e.message, responded: true }));
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', (e) => resolve({ error: e.code ?? e.message, reused: req.reusedSocket, responded: false }));
  });
}

class H2Client {
  #port;
  #session;
  constructor(port) {
    this.#port = port;
  }
  #current() {
    if (this.#session === undefined || this.#session.closed || this.#session.destroyed) {
      const session = http2.connect(`http://127.0.0.1:${this.#port}`);
      session.on('error', () => {});
      // A GOAWAY (the listener draining on reload): later streams go on a new session.
      session.once('goaway', () => {
        if (this.#session === session) this.#session = undefined;
      });
      session.once('close', () => {
        if (this.#session === session) this.#session = undefined;
      });
      this.#session = session;
    }
    return this.#session;
  }
  request() {
    return new Promise((resolve) => {
      let stream;
      try {
        stream = this.#current().request({ ':path': '/', ':authority': 'soak.test' }, { endStream: true });
      } catch (e) {
        this.#session = undefined;
        resolve({ error: e.code ?? e.message, refused: true });
        return;
      }
      let status;
      const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), REQUEST_TIMEOUT_MS);
      stream.once('response', (h) => {
        status = h[':status'];
      });
      stream.resume();
      stream.once('close', () => {
        clearTimeout(timer);
        if (status !== undefined && stream.rstCode === http2.constants.NGHTTP2_NO_ERROR) resolve({ status });
        else {
          const refused = status === undefined && stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM;
          resolve({ error: `rst ${stream.rstCode}`, refused });
        }
      });
      stream.once('error', () => {});
    });
  }
  close() {
    this.#session?.close();
  }
}

/** One paced loop of `kind` until `until()` is false. */
async function loop(kind, perSecond, port, until, shared) {
  const gapMs = 1000 / perSecond;
  let next = performance.now();
  while (until()) {
    let r;
    if (kind === 'h1-keepalive') {
      r = await h1Request(port, shared.agent);
      // The server closed a kept-alive connection as this request went out: send it again once.
      if (r.error !== undefined && r.reused && !r.responded) {
        counts.staleRetries++;
        r = await h1Request(port, shared.agent);
      }
    } else if (kind === 'h2c') {
      r = await shared.h2.request();
      if (r.error !== undefined && r.refused) {
        counts.goawayRetries++;
        r = await shared.h2.request();
      }
    } else {
      r = await h1Request(port, false);
    }
    counts.done++;
    if (r.status !== 200) fail(kind, r.error ?? `status ${r.status}`);
    next += gapMs;
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
    else next = performance.now();
  }
}

function rssBytes(pid) {
  const m = /VmRSS:\s+([0-9]+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? Number.NaN : Number(m[1]) * 1024;
}

async function scrape(adminPort) {
  const text = await new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: adminPort, path: '/metrics', agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
  const metric = (name) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
    return m === null ? Number.NaN : Number(m[1]);
  };
  const reloads = (result) => metric(`evenlb_proxy_config_reloads_total\\{result="${result}"\\}`);
  return {
    heapUsedBytes: metric('nodejs_heap_size_used_bytes'),
    loopP50Ms: metric('nodejs_eventloop_lag_p50_seconds') * 1000,
    loopP99Ms: metric('nodejs_eventloop_lag_p99_seconds') * 1000,
    loopMaxMs: metric('nodejs_eventloop_lag_max_seconds') * 1000,
    reloadsOk: reloads('ok'),
    reloadsFailed: reloads('error') + reloads('invalid'),
  };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'evenlb-soak-'));
  const upstreams = await startUpstreams();
  const endpointsFile = join(dir, 'endpoints.json');
  const configFile = join(dir, 'proxy.yaml');
  const ports = { web: await freePort(), admin: await freePort() };
  writeAtomically(endpointsFile, endpointsAt(0, upstreams));
  writeAtomically(configFile, configText(0, ports, endpointsFile));
  const child = spawn(process.execPath, [cli, 'proxy', '--config', configFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let pending = '';
  let started = false;
  let reloadFailures = 0;
  child.stderr.setEncoding('utf8').on('data', (c) => {
    pending += c;
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const line of lines) {
      if (line.includes('proxy started')) started = true;
      if (line.includes('reload failed')) reloadFailures++;
      if (process.env.EVENLB_SOAK_VERBOSE === '1') process.stderr.write(`${line}\n`);
    }
  });
  for (let i = 0; i < 200 && !started; i++) await sleep(50);
  if (!started) throw new Error('the proxy did not start');
  process.stdout.write(
    `soak: ${MINUTES} min, proxy pid ${child.pid}, listener 127.0.0.1:${ports.web}, load ${CLIENTS.map(([k, n, r]) => `${k} ${n}x${r}/s`).join(', ')}\n`,
  );

  const t0 = performance.now();
  const endMs = MINUTES * MINUTE_MS;
  const running = () => performance.now() - t0 < endMs;
  const shared = { agent: new http.Agent({ keepAlive: true, maxSockets: 4 }), h2: new H2Client(ports.web) };
  const loops = CLIENTS.flatMap(([kind, n, rate]) =>
    Array.from({ length: n }, () => loop(kind, rate, ports.web, running, shared)),
  );

  // Churn and reloads on their own schedule.
  let step = 0;
  let variant = 0;
  let reloadsSent = 0;
  const churn = setInterval(() => {
    step++;
    writeAtomically(endpointsFile, endpointsAt(step, upstreams));
  }, CHURN_MS);
  let reloadTimer;
  const scheduleReload = (minute) => {
    const at = minute * MINUTE_MS + RELOAD_AT_MS;
    if (at >= endMs) return;
    reloadTimer = setTimeout(
      () => {
        variant = 1 - variant;
        writeAtomically(configFile, configText(variant, ports, endpointsFile));
        child.kill('SIGHUP');
        reloadsSent++;
        scheduleReload(minute + 1);
      },
      at - (performance.now() - t0),
    );
  };
  scheduleReload(0);

  // RSS and descriptors are sampled every SAMPLE_MS; a minute's figure is the median of its
  // samples (one reading can land on a garbage collection or an allocator trim), its max beside.
  let samples = { rss: [], fds: [] };
  const sampler = setInterval(() => {
    samples.rss.push(rssBytes(child.pid) / 2 ** 20);
    samples.fds.push(readdirSync(`/proc/${child.pid}/fd`).length);
  }, SAMPLE_MS);
  const rows = [];
  let last = { done: 0, failed: 0 };
  for (let minute = 1; minute <= MINUTES; minute++) {
    await sleep(Math.max(0, minute * MINUTE_MS - (performance.now() - t0)));
    const m = await scrape(ports.admin);
    const minuteSamples = samples;
    samples = { rss: [], fds: [] };
    const row = {
      minute,
      rssMiB: median(minuteSamples.rss),
      rssMaxMiB: Math.max(...minuteSamples.rss),
      heapMiB: m.heapUsedBytes / 2 ** 20,
      fds: median(minuteSamples.fds),
      fdsMax: Math.max(...minuteSamples.fds),
      loopP50Ms: m.loopP50Ms,
      loopP99Ms: m.loopP99Ms,
      loopMaxMs: m.loopMaxMs,
      done: counts.done - last.done,
      failed: counts.failed - last.failed,
      reloadsOk: m.reloadsOk,
      load1: loadavg()[0],
    };
    last = { done: counts.done, failed: counts.failed };
    rows.push(row);
    printTable([row]);
  }
  clearInterval(churn);
  clearInterval(sampler);
  clearTimeout(reloadTimer);
  await Promise.all(loops);
  shared.agent.destroy();
  shared.h2.close();
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(kill);
  for (const u of upstreams) {
    u.server.closeAllConnections();
    u.server.close();
  }
  rmSync(dir, { recursive: true, force: true });

  process.stdout.write('\nper minute\n');
  printTable(rows);
  const base = rows[Math.min(1, rows.length - 1)];
  const end = rows[rows.length - 1];
  const within = (a, b) => Math.abs(a - b) <= TOLERANCE * b;
  const checks = [
    { check: 'failed requests = 0', value: counts.failed, pass: counts.failed === 0 },
    {
      check: `RSS minute ${end.minute} within 10% of minute ${base.minute}`,
      value: `${end.rssMiB.toFixed(1)} vs ${base.rssMiB.toFixed(1)} MiB (${((end.rssMiB / base.rssMiB - 1) * 100).toFixed(1)}%)`,
      pass: within(end.rssMiB, base.rssMiB),
    },
    {
      check: `open descriptors minute ${end.minute} within 10% of minute ${base.minute}`,
      value: `${end.fds} vs ${base.fds}`,
      pass: within(end.fds, base.fds),
    },
  ];
  process.stdout.write(
    `\nrequests ${counts.done}, failed ${counts.failed}, resent after a server-closed keep-alive connection ${counts.staleRetries}, after GOAWAY ${counts.goawayRetries}; reloads sent ${reloadsSent}, failed ${reloadFailures}\n`,
  );
  for (const [k, v] of counts.errors) process.stdout.write(`  failure ${k}: ${v}\n`);
  for (const c of checks) process.stdout.write(`${c.pass ? 'PASS' : 'FAIL'} ${c.check}: ${c.value}\n`);
  writeResult('soak', {
    minutes: MINUTES,
    loadAverage: { atEnd: loadavg(), perMinute: rows.map((r) => r.load1) },
    load: CLIENTS.map(([kind, loops, perSecond]) => ({ kind, loops, perSecond })),
    churnEveryMs: CHURN_MS,
    reloadEveryMs: MINUTE_MS,
    upstreams: UPSTREAMS,
    totals: {
      requests: counts.done,
      failed: counts.failed,
      staleKeepAliveResent: counts.staleRetries,
      goawayResent: counts.goawayRetries,
      reloadsSent,
      reloadFailures,
      failures: Object.fromEntries(counts.errors),
    },
    rows,
    checks,
  });
  if (checks.some((c) => !c.pass)) process.exitCode = 1;
}

await main();
