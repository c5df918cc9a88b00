// The cost of the sidecar's hop: latency (p50, p99) and CPU per request of a request through
// `evenlb proxy --sidecar` to an app on loopback, against the app alone and against nginx as a
// sidecar (proxy_pass to the same app over a keep-alive upstream), in the same run. Load: wrk,
// HTTP/1.1 keep-alive, 8 connections, 5 s per run, rounds interleaved across the three targets,
// medians of the rounds; twice: saturated (each connection sends its next request at once, so
// latency includes queueing behind the slowest stage) and paced (each connection waits 1 ms
// between requests — wrk's delay() — so latency is one request's trip, not a queue). Added
// latency = a sidecar's percentile minus the app's in the same round and mode (then the median
// over rounds). CPU per request = (utime + stime of the sidecar process,
// from /proc/<pid>/stat) / requests. Targets: added p50 <= 150 µs; evenlb's CPU per request at
// most 1.6x nginx's. The machine's load average is recorded before and after: on a shared
// machine the figures are provisional. Results: a table and bench/results/sidecar.json.
//
// Placement as in the proxy benchmark (load-tools.mjs): with taskset and two or more cores, the
// sidecars run on the last core and wrk and the app on the others; EVENLB_BENCH_PIN=0 lets
// everything float. nginx and wrk are installed with apt-get when running as root (else their
// rows are skipped).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
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
  stop,
  toolPath,
  waitForPort,
  wrk as wrkRun,
} from './load-tools.mjs';
import { printTable, writeResult } from './machine.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const RUN_SECONDS = Number(process.env.EVENLB_BENCH_SECONDS ?? 5);
const RUNS = Number(process.env.EVENLB_BENCH_RUNS ?? 5);
const CONNECTIONS = 8;
const ADDED_P50_TARGET_US = 150;
const CPU_TARGET = 1.6;

/** One wrk run against a target (paced with `script`, a wrk Lua file, when given); latencies in µs. */
const wrk = (port, script) =>
  wrkRun({ port, connections: CONNECTIONS, seconds: RUN_SECONDS, hostHeader: 'app.local', script });

/** The app: a plain node:http server with a small fixed body (what a sidecar fronts). */
async function startApp(dir) {
  const port = await freePort();
  const script = join(dir, 'app.mjs');
  writeFileSync(
    script,
    `import http from 'node:http';
const body = Buffer.from('hello from the app\\n');
const s = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
  res.end(body);
});
s.keepAliveTimeout = 65000;
s.listen(${port}, '127.0.0.1');
`,
  );
  const child = start(process.execPath, [script], 'load');
  await waitForPort(port);
  return { port, child };
}

const targets = {
  app: async (_dir, app) => ({ port: app.port, pid: undefined, child: undefined }),
  evenlb: async (_dir, app) => {
    const [port, admin, load] = [await freePort(), await freePort(), await freePort()];
    const child = start(
      process.execPath,
      [
        join(root, 'dist', 'cli', 'main.js'),
        'proxy',
        '--sidecar',
        '--listen',
        `127.0.0.1:${port}`,
        '--app',
        `127.0.0.1:${app.port}`,
        '--peers',
        `static:///127.0.0.1:${port}`,
        '--load-port',
        String(load),
        '--admin',
        `127.0.0.1:${admin}`,
      ],
      'proxy',
      { POD_IP: '127.0.0.1' },
    );
    await waitForPort(port);
    return { port, pid: child.pid, child };
  },
  nginx: async (dir, app) => {
    const bin = toolPath('nginx');
    if (bin === undefined) return undefined;
    const port = await freePort();
    const conf = join(dir, 'nginx.conf');
    // nginx as a sidecar: one worker, keep-alive to the app, the client's address forwarded.
    writeFileSync(
      conf,
      nginxConfig(dir, {
        port,
        upstreams: [`127.0.0.1:${app.port}`],
        keepalive: 64,
        extra: ['proxy_set_header X-Forwarded-For $remote_addr;'],
      }),
    );
    const child = start(bin, ['-c', conf, '-p', dir]);
    await waitForPort(port);
    return { port, pid: child.pid, child };
  },
};

async function main() {
  ensureTools(['wrk', 'nginx']);
  if (!have('wrk')) {
    process.stdout.write('wrk is not installed: sidecar benchmark skipped\n');
    return;
  }
  process.stdout.write(
    PLACEMENT === undefined
      ? 'placement: unpinned\n'
      : `placement: sidecars on core ${PLACEMENT.proxy}, wrk and the app on core(s) ${PLACEMENT.load}\n`,
  );
  const loadBefore = loadavg();
  const dir = mkdtempSync(join(tmpdir(), 'evenlb-bench-sidecar-'));
  const paced = join(dir, 'paced.lua');
  writeFileSync(paced, 'function delay()\n  return 1\nend\n');
  const modes = { saturated: undefined, paced };
  const app = await startApp(dir);
  const running = [];
  const samples = new Map();
  try {
    for (const [name, make] of Object.entries(targets)) {
      const t = await make(dir, app);
      if (t === undefined) process.stdout.write(`${name}: not available, skipped\n`);
      else running.push({ name, ...t });
    }
    for (const t of running) wrk(t.port, undefined); // warm-up: JIT, keep-alive pools
    for (let r = 0; r < RUNS; r++) {
      for (const [mode, script] of Object.entries(modes)) {
        for (const t of running) {
          const before = t.pid === undefined ? 0 : cpuMicros(t.pid);
          const w = wrk(t.port, script);
          const after = t.pid === undefined ? 0 : cpuMicros(t.pid);
          const key = `${t.name} ${mode}`;
          const s = samples.get(key) ?? [];
          s.push({ ...w, cpuUsPerReq: t.pid === undefined ? Number.NaN : (after - before) / w.requests });
          samples.set(key, s);
          process.stdout.write(`round ${r + 1} ${key}: ${w.rps.toFixed(0)} req/s, p50 ${w.p50Us} µs\n`);
        }
      }
    }
    for (const t of running) {
      if (t.child !== undefined && t.child.exitCode !== null)
        process.stdout.write(`${t.name} exited early: ${t.child.errText()}\n`);
    }
  } finally {
    for (const t of running) if (t.child !== undefined) await stop(t.child);
    await stop(app.child);
    rmSync(dir, { recursive: true, force: true });
  }
  const loadAfter = loadavg();
  const rows = [];
  for (const mode of Object.keys(modes)) {
    const base = samples.get(`app ${mode}`) ?? [];
    for (const t of running) {
      const s = samples.get(`${t.name} ${mode}`) ?? [];
      const added = (k) => median(s.map((x, i) => x[k] - (base[i]?.[k] ?? Number.NaN)));
      rows.push({
        mode,
        target: t.name,
        rps: median(s.map((x) => x.rps)),
        p50Us: median(s.map((x) => x.p50Us)),
        p99Us: median(s.map((x) => x.p99Us)),
        addedP50Us: t.name === 'app' ? 0 : added('p50Us'),
        addedP99Us: t.name === 'app' ? 0 : added('p99Us'),
        cpuUsPerReq: median(s.map((x) => x.cpuUsPerReq)),
        errors: s.reduce((a, x) => a + x.errors, 0),
      });
    }
  }
  printTable(rows);
  const find = (mode, target) => rows.find((r) => r.mode === mode && r.target === target);
  const targetsMet = Object.keys(modes).map((mode) => {
    const e = samples.get(`evenlb ${mode}`) ?? [];
    const n = samples.get(`nginx ${mode}`) ?? [];
    const evenlb = find(mode, 'evenlb');
    const nginx = find(mode, 'nginx');
    const cpuVsNginx = evenlb !== undefined && nginx !== undefined ? evenlb.cpuUsPerReq / nginx.cpuUsPerReq : undefined;
    return {
      mode,
      addedP50Us: evenlb?.addedP50Us,
      nginxAddedP50Us: nginx?.addedP50Us,
      addedP50TargetUs: ADDED_P50_TARGET_US,
      addedP50Met: evenlb === undefined ? undefined : evenlb.addedP50Us <= ADDED_P50_TARGET_US,
      cpuVsNginx,
      cpuVsNginxByRound: e.map((x, i) => (x.cpuUsPerReq / (n[i]?.cpuUsPerReq ?? Number.NaN)).toFixed(2)).join(' / '),
      cpuTarget: CPU_TARGET,
      cpuMet: cpuVsNginx === undefined ? undefined : cpuVsNginx <= CPU_TARGET,
    };
  });
  process.stdout.write('\n');
  printTable(targetsMet.map((t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, v ?? 'n/a']))));
  process.stdout.write(
    `load average: ${loadBefore.map((x) => x.toFixed(2)).join(' ')} before, ${loadAfter.map((x) => x.toFixed(2)).join(' ')} after\n`,
  );
  writeResult('sidecar', {
    runSeconds: RUN_SECONDS,
    runs: RUNS,
    connections: CONNECTIONS,
    tool: 'wrk -t1 keep-alive; paced: delay() of 1 ms between a connection’s requests',
    placement: PLACEMENT === undefined ? 'unpinned' : { sidecarCores: PLACEMENT.proxy, loadCores: PLACEMENT.load },
    loadAverage: { before: loadBefore, after: loadAfter },
    rows,
    targets: targetsMet,
  });
}

await main();
