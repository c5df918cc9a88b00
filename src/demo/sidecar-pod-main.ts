/**
 * A demo pod of the `sidecar` phase: two containers' worth of processes, as Kubernetes would run
 * them in one pod — the plain app (`plain-app.js`: Node's core `http` only, no evenlb code) and
 * the fair-share sidecar in front of it. This process is the sidecar: it starts the app, writes
 * the short sidecar YAML file (listen on the pod's address, forward to the app, shed by fair
 * share with the peers the demo's endpoint file lists) and runs what `evenlb proxy --sidecar
 * --config FILE` runs — the same configuration, app check and `ProxyServer` — in this process,
 * so that it can also speak the demo's pod protocol without a third process or an HTTP scrape:
 * `listening` with the sidecar's port (the Service's targetPort), and `stats` at most every
 * 100 ms, only when a figure changed — requests as the sidecar forwarded them to the app
 * (its warm-up requests left out), client connections as its listener counts them. On `stop`
 * it terminates as the pod would: a preStop wait until the sidecar holds no client connection
 * (its hand-over; at most 2 s), the sidecar's drain (in-flight requests finish within the
 * grace), then the app's stop. The app runs in this process's group, so killing the pod's group
 * kills both.
 *
 * Usage (spawned by the demo): `node sidecar-pod.js --name pod-1 --address 127.0.1.1
 *   --fair-share-peers URI --load-port N [--fair-share-* ...] [--warm-up-requests N]
 *   [--grace-ms MS] --evenlb-demo RUN`
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { FairShareLoadMetric } from '../balancing/fair-share/fair-share-options.js';
import { systemClock } from '../core/clock.js';
import { proxyMetricNames } from '../metrics/proxy-metrics.js';
import { ProxyServer } from '../proxy/proxy-server.js';
import { loadSidecarConfigFile, SIDECAR_CLUSTER, SIDECAR_LISTENER } from '../proxy/sidecar/sidecar-config.js';
import { startSidecarRuntime } from '../proxy/sidecar/sidecar-runtime.js';
import { listenToParent, sendToParent } from './child-channel.js';
import { childScript } from './child-scripts.js';
import { DemoChild, type Spawner } from './demo-child.js';
import { warmUp, warmUpLoadExchange } from './pod-warm-up.js';
import { DEMO_MARKER_FLAG } from './protocol.js';

const STATS_INTERVAL_MS = 100;
const START_TIMEOUT_MS = 15_000;
/**
 * The longest the stop waits for the hand-over, as the manifests' preStop hook does (there 5–10
 * s; here under the 3 s the demo gives a pod to exit after its grace): a busy machine can take
 * longer than the grace for every client to send the request whose response carries
 * `Connection: close`.
 */
const PRE_STOP_MAX_MS = 2000;
const PRE_STOP_POLL_MS = 20;

/** The app stays in this process's group (not detached): the demo kills the pod's group. */
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

  // The app dies with the pod whenever it goes, also while it is still starting: when the
  // orchestrator goes (stdin ends), on a stop before `listening`, and on SIGTERM/SIGINT (a
  // network namespace's close signals the pod alone, not its group; a signal skips 'exit' hooks).
  const app = new DemoChild(
    `${name} app`,
    process.execPath,
    [childScript('plain-app'), '--name', name, '--address', address, '--port', '0', DEMO_MARKER_FLAG, run],
    inGroup,
  );
  const killApp = (): void => app.kill('SIGKILL');
  let onStop: (() => void) | undefined;
  listenToParent((message) => {
    if (message.type !== 'stop') return;
    if (onStop !== undefined) return onStop();
    killApp();
    process.exit(0);
  }, killApp);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      killApp();
      process.exit(1);
    });
  }
  const appPort = Number((await app.next('listening', START_TIMEOUT_MS)).port);

  const fairShare: Record<string, unknown> = {};
  for (const [flag, field] of Object.entries(FAIR_SHARE_FLAGS)) {
    const v = values[flag as keyof typeof values];
    if (typeof v === 'string') fairShare[field] = Number(v);
  }
  if (values['fair-share-load-metric'] !== undefined) fairShare.loadMetric = values['fair-share-load-metric'];
  const graceMs = Number(values['grace-ms']);
  // JSON is YAML: read as the sidecar's short form, as `evenlb proxy --sidecar --config` reads it.
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
  // What `evenlb proxy --sidecar --config FILE` starts: the proxy, its app check gating /readyz.
  const setup = loadSidecarConfigFile(file);
  const { appHealth, proxyOptions } = startSidecarRuntime(setup, systemClock);
  const proxy = await ProxyServer.start(setup.config, proxyOptions);
  const port = proxy.listenerPort(SIDECAR_LISTENER) as number;

  // Requests as the sidecar forwarded them to the app; client connections as its listener counts them.
  const forwarded = (): number => proxy.clusters.get(SIDECAR_CLUSTER)?.stats().endpoints[0]?.requests ?? 0;
  const connections = proxy.metrics.registry.getSingleMetric(proxyMetricNames.downstreamConnections);
  const opened = proxy.metrics.registry.getSingleMetric(proxyMetricNames.downstreamConnectionsOpened);
  const listenerValue = async (metric: typeof connections): Promise<number> =>
    (await metric?.get())?.values.find((v) => v.labels.listener === SIDECAR_LISTENER)?.value ?? 0;

  const warmUpCount = Number(values['warm-up-requests']);
  await warmUp(address, port, warmUpCount);
  // Both ends of the fair-share exchange, its client too (see pod-warm-up), as the evenlb pods do.
  await warmUpLoadExchange(
    address,
    loadPort,
    warmUpCount / 24,
    values['fair-share-load-metric'] as FairShareLoadMetric | undefined,
  );
  // Warm-up requests are answered and left out: the count starts once the pod is ready.
  const warmUpForwarded = forwarded();
  const openedBefore = await listenerValue(opened);

  let last = '';
  let reporting = false;
  const report = async (force = false): Promise<void> => {
    if (reporting && !force) return;
    reporting = true;
    try {
      const stats = {
        type: 'stats',
        requests: forwarded() - warmUpForwarded,
        openConnections: await listenerValue(connections),
        connectionsTotal: (await listenerValue(opened)) - openedBefore,
      };
      const line = JSON.stringify(stats);
      // An idle pod (a replacement not listed yet) sends nothing and wakes nobody.
      if (line !== last || force) sendToParent(stats);
      last = line;
    } finally {
      reporting = false;
    }
  };
  const timer = setInterval(() => void report(), STATS_INTERVAL_MS);
  timer.unref();

  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    // The pod's termination, as the manifests run it: a preStop wait while the sidecar hands its
    // clients over (until it holds no client connection, at most PRE_STOP_MAX_MS), then the
    // sidecar drains (in-flight requests finish within the grace), then the app stops.
    const deadline = systemClock.now() + PRE_STOP_MAX_MS;
    while (systemClock.now() < deadline && (await listenerValue(connections)) > 0) {
      await new Promise<void>((r) => systemClock.setTimeout(r, PRE_STOP_POLL_MS));
    }
    clearInterval(timer);
    await proxy.close();
    await appHealth.close();
    await report(true);
    app.kill('SIGTERM');
    await app.waitExit(3000);
    sendToParent({ type: 'stopped' });
    setImmediate(() => process.exit(0));
  };
  onStop = () => void stop();
  void app.exited.then(() => {
    if (stopping) return;
    sendToParent({ type: 'error', message: `${app.name} exited:\n${app.stderrTail}` });
    process.exit(1);
  });
  await report(true);
  sendToParent({ type: 'listening', address, port, pid: process.pid });
}

main().catch((err: unknown) => {
  sendToParent({ type: 'error', message: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
