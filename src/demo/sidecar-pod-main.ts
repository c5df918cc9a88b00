/**
 * A demo pod of the `sidecar` phase: two containers' worth of processes, as Kubernetes would run
 * them in one pod — the plain app (`plain-app.js`: Node's core `http` only, no evenlb code) and
 * `evenlb proxy --sidecar` in front of it, started from a short sidecar YAML file the pod writes
 * (listen on the pod's address, forward to the app, shed by fair share with the peers the
 * demo's endpoint file lists). This process only starts the two, warms them up and speaks the
 * demo's pod protocol for them: `listening` with the sidecar's port (the Service's
 * targetPort), `stats` every 100 ms — requests as the app counts them, client connections as
 * the sidecar's `/metrics` counts them — and, on `stop`, the pod's termination: a preStop wait
 * until the sidecar holds no client connection (its hand-over; at most 2 s), the sidecar's drain
 * (SIGTERM: in-flight requests finish within the grace), then the app's stop. The app and
 * the sidecar run in this process's group, so killing the pod's group kills all three.
 *
 * Usage (spawned by the demo): `node sidecar-pod.js --name pod-1 --address 127.0.1.1
 *   --fair-share-peers URI --load-port N [--fair-share-* ...] [--warm-up-requests N]
 *   [--grace-ms MS] --evenlb-demo RUN`
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { systemClock } from '../core/clock.js';
import { listenToParent, sendToParent } from './child-channel.js';
import { childScript, cliScript } from './child-scripts.js';
import { DemoChild, type Spawner } from './demo-child.js';
import { inParallelLoops, warmUp } from './pod-warm-up.js';
import { DEMO_MARKER_FLAG } from './protocol.js';

const STATS_INTERVAL_MS = 100;
const METRICS_INTERVAL_MS = 500;
/**
 * The two families the pod reads, asked by name: the whole registry (process and runtime
 * collectors included) every 500 ms in each of the phase's sidecars cost more CPU than the
 * requests they forwarded.
 */
const METRICS_PATH = `/metrics?name=${[
  'evenlb_proxy_downstream_connections',
  'evenlb_proxy_downstream_connections_opened_total',
].join('&name=')}`;
const START_TIMEOUT_MS = 15_000;
/**
 * The longest the stop waits for the hand-over, as the manifests' preStop hook does (there 5–10
 * s; here under the 3 s the demo gives a pod to exit after its grace): a busy machine can take
 * longer than the grace for every client to send the request whose response carries
 * `Connection: close`.
 */
const PRE_STOP_MAX_MS = 2000;

/** Children stay in this process's group (not detached): the demo kills the pod's group. */
const inGroup: Spawner = (command, args) => spawn(command, [...args], { stdio: ['pipe', 'pipe', 'pipe'] });

const FAIR_SHARE_FLAGS = {
  'fair-share-tolerance': 'tolerance',
  'fair-share-period-ms': 'periodMs',
  'fair-share-window-ms': 'windowMs',
  'fair-share-warmup-ms': 'warmupMs',
  'fair-share-cooldown-ms': 'cooldownMs',
  'fair-share-max-shed-fraction': 'maxShedFraction',
  'fair-share-peers-per-period': 'peersPerPeriod',
  'fair-share-peer-ttl-ms': 'peerTtlMs',
} as const;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      name: { type: 'string', default: 'pod' },
      address: { type: 'string', default: '127.0.0.1' },
      'fair-share-peers': { type: 'string' },
      'load-port': { type: 'string' },
      'fair-share-load-metric': { type: 'string' },
      ...Object.fromEntries(Object.keys(FAIR_SHARE_FLAGS).map((k) => [k, { type: 'string' as const }])),
      'warm-up-requests': { type: 'string', default: '0' },
      'grace-ms': { type: 'string', default: '500' },
      seed: { type: 'string' },
      'evenlb-demo': { type: 'string' },
    },
  });
  const name = values.name as string;
  const address = values.address as string;
  const run = values['evenlb-demo'] ?? '';
  const peers = values['fair-share-peers'];
  const loadPort = Number(values['load-port']);
  if (peers === undefined || !(loadPort > 0))
    throw new Error('sidecar pod: --fair-share-peers and --load-port are required');
  const dir = mkdtempSync(join(tmpdir(), `evenlb-demo-${name}-`));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

  // The pod's children die with it whenever it goes, also while it is still starting: when the
  // orchestrator goes (stdin ends), on a stop before `listening`, and on SIGTERM/SIGINT (a
  // network namespace's close signals the pod alone, not its group; a signal skips 'exit' hooks).
  const children: DemoChild[] = [];
  const killChildren = (): void => {
    for (const child of children) child.kill('SIGKILL');
  };
  let onStop: (() => void) | undefined;
  listenToParent((message) => {
    if (message.type !== 'stop') return;
    if (onStop !== undefined) return onStop();
    killChildren();
    process.exit(0);
  }, killChildren);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      killChildren();
      process.exit(1);
    });
  }

  const app = new DemoChild(
    `${name} app`,
    process.execPath,
    [childScript('plain-app'), '--name', name, '--address', address, '--port', '0', DEMO_MARKER_FLAG, run],
    inGroup,
  );
  children.push(app);
  let requests = 0;
  app.on((m) => {
    if (m.type === 'stats') requests = Number(m.requests);
  });
  const appPort = Number((await app.next('listening', START_TIMEOUT_MS)).port);

  const fairShare: Record<string, unknown> = {};
  for (const [flag, field] of Object.entries(FAIR_SHARE_FLAGS)) {
    const v = values[flag as keyof typeof values];
    if (typeof v === 'string') fairShare[field] = Number(v);
  }
  if (values['fair-share-load-metric'] !== undefined) fairShare.loadMetric = values['fair-share-load-metric'];
  const graceMs = Number(values['grace-ms']);
  // JSON is YAML: the sidecar reads it as its short form (and this process stays small).
  const file = join(dir, 'sidecar.yaml');
  writeFileSync(
    file,
    JSON.stringify({
      sidecar: {
        listen: `${address}:0`,
        app: `http://${address}:${appPort}`,
        peers,
        self: address,
        loadPort,
        loadHost: address,
        admin: `${address}:0`,
        appCheck: { kind: 'tcp', intervalMs: 1000, timeoutMs: 500 },
        drainTimeoutMs: graceMs,
        logLevel: 'info',
        fairShare,
      },
    }),
  );
  const sidecar = new DemoChild(
    `${name} sidecar`,
    process.execPath,
    [cliScript(), 'proxy', '--sidecar', '--config', file],
    inGroup,
  );
  children.push(sidecar);
  const { port, admin } = await sidecarStarted(sidecar);

  const warmUpCount = Number(values['warm-up-requests']);
  await warmUp(address, port, warmUpCount);
  await warmUpLoadExchange(address, loadPort, warmUpCount / 24);

  // Client connections as the sidecar counts them (its /metrics), polled.
  let openConnections = 0;
  let connectionsTotal = 0;
  let polling = true;
  const poll = async (): Promise<void> => {
    while (polling) {
      const text = await metricsText(address, admin).catch(() => undefined);
      if (text !== undefined) {
        openConnections = gauge(text, 'evenlb_proxy_downstream_connections') ?? openConnections;
        connectionsTotal = gauge(text, 'evenlb_proxy_downstream_connections_opened_total') ?? connectionsTotal;
      }
      await new Promise<void>((r) => systemClock.setTimeout(r, METRICS_INTERVAL_MS));
    }
  };
  void poll();
  const report = (): void => sendToParent({ type: 'stats', requests, openConnections, connectionsTotal });
  const timer = setInterval(report, STATS_INTERVAL_MS);
  timer.unref();

  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    // The pod's termination, as the manifests run it: a preStop wait while the sidecar hands its
    // clients over (until it holds no client connection, at most PRE_STOP_MAX_MS), then SIGTERM
    // drains the sidecar (in-flight requests finish within the grace), then the app stops.
    const deadline = systemClock.now() + PRE_STOP_MAX_MS;
    while (systemClock.now() < deadline) {
      const text = await metricsText(address, admin).catch(() => undefined);
      if (text !== undefined && gauge(text, 'evenlb_proxy_downstream_connections') === 0) break;
      await new Promise<void>((r) => systemClock.setTimeout(r, 50));
    }
    sidecar.kill('SIGTERM');
    await sidecar.waitExit(graceMs + 3000);
    polling = false;
    openConnections = 0;
    app.kill('SIGTERM');
    await app.waitExit(3000);
    report();
    sendToParent({ type: 'stopped' });
    setImmediate(() => process.exit(0));
  };
  onStop = () => void stop();
  for (const child of [app, sidecar]) {
    void child.exited.then(() => {
      if (stopping) return;
      sendToParent({ type: 'error', message: `${child.name} exited:\n${child.stderrTail}` });
      process.exit(1);
    });
  }
  sendToParent({ type: 'listening', address, port, pid: process.pid });
}

/** Waits for the sidecar's `proxy started` log line (pino JSON on stderr): its listener and admin ports. */
function sidecarStarted(sidecar: DemoChild): Promise<{ port: number; admin: number }> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = systemClock.setTimeout(
      () => reject(new Error(`${sidecar.name}: not started within ${START_TIMEOUT_MS} ms:\n${sidecar.stderrTail}`)),
      START_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer | string): void => {
      buffered += String(chunk);
      for (const line of buffered.split('\n')) {
        if (!line.includes('"proxy started"')) continue;
        try {
          const entry = JSON.parse(line) as { listeners?: { name: string; port: number }[]; admin?: number };
          const port = entry.listeners?.find((l) => l.name === 'sidecar')?.port;
          if (port === undefined || entry.admin === undefined) continue;
          timer.cancel();
          sidecar.process.stderr?.off('data', onData);
          resolve({ port, admin: entry.admin });
          return;
        } catch {
          // A line cut in two: the rest comes with the next chunk.
        }
      }
      buffered = buffered.slice(buffered.lastIndexOf('\n') + 1);
    };
    sidecar.process.stderr?.on('data', onData);
    void sidecar.exited.then(() => {
      timer.cancel();
      reject(new Error(`${sidecar.name} exited before listening:\n${sidecar.stderrTail}`));
    });
  });
}

function metricsText(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = get({ host, port, path: METRICS_PATH, agent: false, timeout: 2000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(text));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('metrics: no answer')));
    req.on('error', reject);
  });
}

function gauge(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}\\{listener="sidecar"\\} ([0-9.e+]+)$`, 'm').exec(text);
  return m === null ? undefined : Number(m[1]);
}

/**
 * Asks the sidecar's own load document `count` times (4 at a time, a connection each, as peers
 * ask), so the exchange's server side is compiled before the pod is listed (see pod-main).
 */
async function warmUpLoadExchange(address: string, loadPort: number, count: number): Promise<void> {
  if (!(count > 0)) return;
  const ask = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = get({ host: address, port: loadPort, path: '/.well-known/evenlb/load', agent: false }, (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`load exchange: ${res.statusCode}`)),
        );
      });
      req.on('error', reject);
    });
  await inParallelLoops(count, ask);
}

main().catch((err: unknown) => {
  sendToParent({ type: 'error', message: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
