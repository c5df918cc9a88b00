/**
 * The demo's clients: one child process running `--clients` long-lived clients, each sending
 * GET requests at a steady rate over keep-alive connections, one request at a time (like a
 * webhook caller or a service with a few busy callers). A client talks to the Service either
 * through its own `BalancedAgent` (per-request balancing, or the legacy pinned mode behind the
 * `RoundTripLoadBalancing` gate) fed by an endpoint list the orchestrator publishes, or
 * directly to one address (the proxy, or a Service VIP behind kube-proxy rules) over a single
 * connection. It reports successes and failures every 200 ms as JSON lines on stdout, and in its
 * last report how long it sent and the latencies its requests saw (a bounded sample).
 */
import { Client, type Dispatcher, request } from 'undici';
import { BalancedAgent } from '../client/balanced-agent.js';
import { systemClock } from '../core/clock.js';
import type { EndpointInput } from '../core/endpoint.js';
import { SeededRandom } from '../core/random.js';
import { StaticEndpointSource } from '../discovery/static-endpoint-source.js';
import { listenToParent, sendToParent } from './child-channel.js';
import { LatencySample } from './latency-sample.js';
import { DEMO_SERVICE_HOST, DEMO_SERVICE_PORT, type LoadStart } from './protocol.js';

const REPORT_INTERVAL_MS = 200;
const REQUEST_TIMEOUT_MS = 5000;

let ok = 0;
let failed = 0;
const errorsByCode: Record<string, number> = {};
let running = true;
const sources: StaticEndpointSource[] = [];
const dispatchers: Dispatcher[] = [];
const loops: Promise<void>[] = [];
let latencies: LatencySample | undefined;
let startedAtMs: number | undefined;
let stoppedAtMs: number | undefined;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    systemClock.setTimeout(resolve, ms);
  });
}

async function clientLoop(dispatcher: Dispatcher, url: string, intervalMs: number, random: SeededRandom) {
  let nextAt = systemClock.now() + random.next() * intervalMs;
  while (running) {
    const wait = nextAt - systemClock.now();
    if (wait > 0) await sleep(wait);
    if (!running) break;
    nextAt += intervalMs * (0.8 + 0.4 * random.next());
    // Behind schedule (a slow response): do not burst to catch up.
    if (nextAt < systemClock.now()) nextAt = systemClock.now();
    const sentAtMs = systemClock.now();
    try {
      const res = await request(url, {
        dispatcher,
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: REQUEST_TIMEOUT_MS,
      });
      await res.body.text();
      latencies?.add(systemClock.now() - sentAtMs);
      if (res.statusCode === 200) ok++;
      else {
        failed++;
        const code = `HTTP ${res.statusCode}`;
        errorsByCode[code] = (errorsByCode[code] ?? 0) + 1;
      }
    } catch (err) {
      failed++;
      const code = (err as { code?: unknown }).code;
      const key = typeof code === 'string' ? code : err instanceof Error ? err.name : 'error';
      errorsByCode[key] = (errorsByCode[key] ?? 0) + 1;
    }
  }
}

function report(final = false): void {
  const sendingMs = startedAtMs === undefined ? 0 : (stoppedAtMs ?? systemClock.now()) - startedAtMs;
  const latencyMs = final ? latencies?.quantiles() : undefined;
  sendToParent({
    type: 'stats',
    ok,
    failed,
    errorsByCode,
    sendingMs,
    ...(latencyMs === undefined ? {} : { latencyMs }),
  });
}

async function start(config: LoadStart): Promise<void> {
  const random = new SeededRandom(config.seed);
  // A stream of its own, so the clients' schedules stay what the seed made them.
  latencies = new LatencySample(new SeededRandom((config.seed ^ 0x1a7e) >>> 0));
  const intervalMs = 1000 / config.ratePerClient;
  let url: string;
  if (config.mode.kind === 'agent') {
    url = `http://${DEMO_SERVICE_HOST}:${DEMO_SERVICE_PORT}/`;
    for (let i = 0; i < config.clients; i++) {
      // Every client has its own discovery watch and agent, like separate caller replicas.
      const source = new StaticEndpointSource(config.mode.endpoints, 'demo-endpoints');
      sources.push(source);
      dispatchers.push(
        new BalancedAgent({
          routes: { [`${DEMO_SERVICE_HOST}:${DEMO_SERVICE_PORT}`]: source },
          random: random.fork(),
          ...(config.mode.roundTrip ? {} : { featureGates: 'RoundTripLoadBalancing=false' }),
        }),
      );
    }
  } else {
    url = config.mode.url;
    for (let i = 0; i < config.clients; i++) {
      // One Client is one connection: a long-lived keep-alive connection, reopened when closed.
      dispatchers.push(new Client(new URL(url).origin, { keepAliveTimeout: 120_000, pipelining: 1 }));
    }
  }
  startedAtMs = systemClock.now();
  for (const d of dispatchers) loops.push(clientLoop(d, url, intervalMs, random.fork()));
  sendToParent({ type: 'started', pid: process.pid });
}

async function stop(): Promise<void> {
  if (!running) return;
  running = false;
  await Promise.race([Promise.allSettled(loops), sleep(REQUEST_TIMEOUT_MS + 500)]);
  stoppedAtMs = systemClock.now();
  // The final report (with the latencies) is the last: a periodic one sent while the
  // connections close would replace it in the demo's hands, latencies gone.
  clearInterval(timer);
  report(true);
  await Promise.race([Promise.allSettled(dispatchers.map((d) => d.close())), sleep(2000)]);
  for (const s of sources) await s.close();
  sendToParent({ type: 'stopped' });
  setImmediate(() => process.exit(0));
}

const timer = setInterval(report, REPORT_INTERVAL_MS);
timer.unref();

listenToParent((message) => {
  switch (message.type) {
    case 'start':
      start(message as unknown as LoadStart).catch((err: unknown) => {
        sendToParent({ type: 'error', message: err instanceof Error ? err.message : String(err) });
        process.exit(1);
      });
      break;
    case 'endpoints':
      for (const s of sources) s.update(message.endpoints as EndpointInput[]);
      break;
    case 'stop':
      void stop();
      break;
  }
});
// Keep the process alive while waiting for `start` (stdin alone keeps it alive too).
sendToParent({ type: 'ready', pid: process.pid });
