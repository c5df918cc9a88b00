// What the wrk benchmarks (proxy, sidecar) share: finding and installing their tools, placing
// processes on cores, free ports, starting and stopping the processes under test, their CPU time
// from /proc, one wrk run parsed into figures, medians — and the bounded in-process load loop the
// client benchmarks (agent, gRPC, load report) drive their requests with.
//
// CPU placement: with taskset and two or more cores, the processes under test (role `proxy`) run
// on the last core and wrk and the backends (role `load`) on the others, so a proxy's CPU per
// request is its own work, not the cost of being descheduled for the load generator on a shared
// core. EVENLB_BENCH_PIN=0 turns it off (everything floats).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** True when `cmd` runs here. */
export function have(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

/** The path of a tool found on PATH or in /usr/sbin, or undefined. */
export function toolPath(name) {
  if (have(name)) return name;
  if (have(`/usr/sbin/${name}`)) return `/usr/sbin/${name}`;
  return undefined;
}

/** Installs the missing ones of `tools` with apt-get when running as root; says which rows are skipped otherwise. */
export function ensureTools(tools) {
  const need = tools.filter((t) => toolPath(t) === undefined);
  if (need.length === 0) return;
  if (process.getuid?.() !== 0) {
    process.stdout.write(`missing ${need.join(', ')} and not root: those rows are skipped\n`);
    return;
  }
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...need], {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

const CORES = availableParallelism();
const PIN = process.env.EVENLB_BENCH_PIN !== '0' && CORES >= 2 && have('taskset');
/** Cores by role, or undefined when unpinned. */
export const PLACEMENT = PIN ? { proxy: String(CORES - 1), load: CORES === 2 ? '0' : `0-${CORES - 2}` } : undefined;

/** `cmd args` placed on the cores of `role` (taskset execs the command: the pid is the command's). */
export function placed(role, cmd, args) {
  return PLACEMENT === undefined ? [cmd, args] : ['taskset', ['-c', PLACEMENT[role], cmd, ...args]];
}

/** A port free on `host` now (bound, then released). */
export function freePort(host = '127.0.0.1') {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, host, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once `host:port` accepts a connection; throws after `timeoutMs`. */
export async function waitForPort(port, host = '127.0.0.1', timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = connect(port, host);
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`port ${host}:${port} did not open`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts `cmd args` on the cores of `role`; `child.errText()` is the tail of its stderr. */
export function start(cmd, args, role = 'proxy', env = {}) {
  const [bin, argv] = placed(role, cmd, args);
  const child = spawn(bin, argv, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let err = '';
  child.stderr?.on('data', (c) => {
    err += c;
    if (err.length > 20_000) err = err.slice(-10_000);
  });
  child.errText = () => err;
  return child;
}

/** SIGTERM, then SIGKILL after 3 s; resolves once it exited. */
export async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(t);
}

/** utime + stime of a process so far, µs (from /proc/<pid>/stat). */
export function cpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[11] = utime, fields[12] = stime (fields 14 and 15 of proc(5), after pid and comm).
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/** wrk's command line for one run (one thread, keep-alive, `Host: host header`), placed on the load cores. */
function wrkCommand({ port, host = '127.0.0.1', connections, seconds, hostHeader, script }) {
  return placed('load', 'wrk', [
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--latency',
    ...(script === undefined ? [] : ['-s', script]),
    '-H',
    `Host: ${hostHeader}`,
    `http://${host}:${port}/`,
  ]);
}

/** The figures of one wrk run's output. Latencies in µs. */
function wrkFigures(out) {
  const num = (re) => Number(re.exec(out)?.[1] ?? Number.NaN);
  const us = (label) => {
    const m = new RegExp(`\\s${label}%\\s+([0-9.]+)(us|ms|s)`).exec(out);
    if (m === null) return Number.NaN;
    return Number(m[1]) * (m[2] === 'us' ? 1 : m[2] === 'ms' ? 1000 : 1e6);
  };
  const socket = /Socket errors: connect ([0-9]+), read ([0-9]+), write ([0-9]+), timeout ([0-9]+)/.exec(out);
  return {
    requests: num(/([0-9]+) requests in/),
    rps: num(/Requests\/sec:\s+([0-9.]+)/),
    p50Us: us('50'),
    p99Us: us('99'),
    errors:
      (num(/Non-2xx or 3xx responses: ([0-9]+)/) || 0) +
      (socket === null ? 0 : socket.slice(1).reduce((a, b) => a + Number(b), 0)),
  };
}

/**
 * One wrk run (one thread, keep-alive, `Host: host header`), placed on the load cores; with
 * `script`, a wrk Lua file (e.g. pacing with delay()). Latencies in µs.
 */
export function wrk(options) {
  const [bin, argv] = wrkCommand(options);
  return wrkFigures(spawnSync(bin, argv, { encoding: 'utf8', timeout: (options.seconds + 20) * 1000 }).stdout ?? '');
}

/** `wrk(options)` without blocking, so that several runs can load several targets at once. */
export function wrkAsync(options) {
  const [bin, argv] = wrkCommand(options);
  return new Promise((resolve) => {
    const child = spawn(bin, argv, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), (options.seconds + 20) * 1000);
    child.on('close', () => {
      clearTimeout(timer);
      resolve(wrkFigures(out));
    });
  });
}

/**
 * Runs `once()` `count` times, `concurrency` loops at a time, each one call after another,
 * stopping early at `maxMs`; a call that throws counts as failed. Returns what was sent, what
 * failed and the wall time.
 *
 * @example
 * const { sent, failed, ms } = await boundedLoad({ count: 20_000, concurrency: 16, maxMs: 30_000, once: () => call() });
 */
export async function boundedLoad({ count, concurrency, maxMs, once }) {
  let sent = 0;
  let failed = 0;
  const t0 = performance.now();
  const deadline = t0 + maxMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < count && performance.now() < deadline) {
        sent++;
        try {
          await once();
        } catch {
          failed++;
        }
      }
    }),
  );
  return { sent, failed, ms: performance.now() - t0 };
}

/** The median of the finite values (NaN when there is none). */
export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return v.length === 0 ? Number.NaN : v[Math.floor(v.length / 2)];
}

/**
 * An nginx configuration for a benchmark: one worker, no access log, temporary files in `dir`,
 * `proxy_pass` to the `upstreams` over keep-alive connections, `extra` lines in the location.
 */
export function nginxConfig(dir, { port, upstreams, keepalive, extra = [] }) {
  return `daemon off;
master_process off;
worker_processes 1;
error_log ${dir}/nginx-error.log error;
pid ${dir}/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/nginx-body;
  proxy_temp_path ${dir}/nginx-proxy;
  fastcgi_temp_path ${dir}/nginx-fastcgi;
  uwsgi_temp_path ${dir}/nginx-uwsgi;
  scgi_temp_path ${dir}/nginx-scgi;
  upstream backends {
    ${upstreams.map((e) => `server ${e};`).join('\n    ')}
    keepalive ${keepalive};
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;${extra.map((l) => `\n      ${l}`).join('')}
    }
  }
}
`;
}

/**
 * The benchmarks' backends: one child process (on the load cores) serving a tiny fixed body on
 * port-free loopback `addrs`, written to `dir`. Resolves once every address accepts connections,
 * with `endpoints` as `host:port` strings.
 */
export async function startBackends(dir, addrs) {
  const ports = [];
  for (const a of addrs) ports.push(await freePort(a));
  const script = join(dir, 'backends.mjs');
  writeFileSync(
    script,
    `import http from 'node:http';
const body = Buffer.from('hello from evenlb bench\\n');
const list = ${JSON.stringify(addrs.map((a, i) => [a, ports[i]]))};
for (const [host, port] of list) {
  const s = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
    res.end(body);
  });
  s.keepAliveTimeout = 65000;
  s.listen(port, host);
}
`,
  );
  const child = start(process.execPath, [script], 'load');
  for (let i = 0; i < addrs.length; i++) await waitForPort(ports[i], addrs[i]);
  return { child, endpoints: addrs.map((a, i) => `${a}:${ports[i]}`) };
}

/**
 * `evenlb proxy` from the built tree at `root` (its dist/), on the proxy cores: one HTTP listener
 * on a free loopback port balancing over `endpoints` with the default policy, logging at warn.
 * Its config is written to `dir/<name>.yaml`; `nodeArgs` go to node before the script (e.g. --cpu-prof);
 * `listenerExtra`: more listener fields, YAML flow (e.g. `, loadReport: { ... }`).
 */
export async function startEvenlbProxy(
  dir,
  root,
  endpoints,
  { name = 'evenlb', nodeArgs = [], listenerExtra = '' } = {},
) {
  const port = await freePort();
  const admin = await freePort();
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `admin: { address: "127.0.0.1:${admin}" }
logLevel: warn
listeners: [{ name: web, address: "127.0.0.1:${port}", protocol: http${listenerExtra} }]
clusters: [{ name: backends, target: "static:///${endpoints.join(',')}" }]
`,
  );
  const child = start(process.execPath, [...nodeArgs, join(root, 'dist', 'cli', 'main.js'), 'proxy', '--config', file]);
  try {
    await waitForPort(port);
  } catch (err) {
    await stop(child);
    throw new Error(`evenlb proxy from ${root} did not listen: ${err.message}\n${child.errText()}`);
  }
  return { port, pid: child.pid, child };
}
