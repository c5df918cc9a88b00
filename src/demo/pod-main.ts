/**
 * A demo "pod": one child process serving HTTP/1.1 on its own loopback address, as one replica
 * of a Service would. It counts the requests it answers and the connections it holds and
 * reports both to the orchestrator every 100 ms (JSON lines on stdout). On `stop` it drains
 * like a pod given SIGTERM: every further response carries `Connection: close`, and after a
 * grace period whatever is still open is closed. With `--recycle-*` flags the server runs
 * evenlb's connection recycler, the server-side cure for pinned keep-alive connections.
 *
 * With `--fair-share-peers URI` the recycler sheds by fair share instead: the pod learns its
 * peers from that endpoint list (the demo's file:///), serves its load on the same port, and
 * closes connections only while it carries more than its share.
 *
 * With `--warm-up-requests N` the pod sends itself N requests over 4 connections before it
 * reports `listening` (so before the demo lists it), as services with a JIT warm up before their
 * readiness probe passes: on a busy machine a cold Node process answers its first few hundred
 * requests slowly, and clients that send one request at a time then give it fewer requests
 * whatever the balancing does. Warm-up requests are not counted. With `--fair-share-peers` the
 * pod also asks itself for its load document (a 24th as many times) over the load
 * exchange's own client, so that path (undici's client, the answer on the server side) is warm
 * too: once listed, a pod asks every peer and is asked by every peer ten times a second, and a
 * cold exchange stalled the new pod's event loop for over 100 ms at a time in its first second.
 *
 * Usage (spawned by the demo): `node pod.js --name pod-1 --address 127.0.1.1 [--port 0]
 *   [--recycle-max-requests N] [--recycle-max-age-ms MS] [--recycle-grace-ms MS]
 *   [--fair-share-peers URI [--fair-share-tolerance F] [--fair-share-period-ms MS] [--fair-share-window-ms MS]
 *    [--fair-share-warmup-ms MS] [--fair-share-cooldown-ms MS] [--fair-share-max-shed-fraction F]
 *    [--fair-share-peers-per-period N] [--fair-share-peer-ttl-ms MS] [--fair-share-load-metric M]]
 *   [--warm-up-requests N] [--seed N] --evenlb-demo RUN`
 */
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseArgs } from 'node:util';
import type { FairShareLoadMetric } from '../balancing/fair-share/fair-share-options.js';
import { systemClock } from '../core/clock.js';
import { SeededRandom } from '../core/random.js';
import { recycleConnections } from '../server/recycle-connections.js';
import { listenToParent, sendToParent } from './child-channel.js';
import { WARM_UP_HEADER, warmUp, warmUpLoadExchange } from './pod-warm-up.js';

const STATS_INTERVAL_MS = 100;

const optional = <K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> =>
  value === undefined ? {} : ({ [key]: value } as Record<K, number>);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      name: { type: 'string' },
      address: { type: 'string' },
      port: { type: 'string', default: '0' },
      'recycle-max-requests': { type: 'string' },
      'recycle-max-age-ms': { type: 'string' },
      'recycle-grace-ms': { type: 'string' },
      'fair-share-peers': { type: 'string' },
      'fair-share-tolerance': { type: 'string' },
      'fair-share-period-ms': { type: 'string' },
      'fair-share-window-ms': { type: 'string' },
      'fair-share-warmup-ms': { type: 'string' },
      'fair-share-cooldown-ms': { type: 'string' },
      'fair-share-max-shed-fraction': { type: 'string' },
      'fair-share-peers-per-period': { type: 'string' },
      'fair-share-peer-ttl-ms': { type: 'string' },
      'fair-share-load-metric': { type: 'string' },
      'warm-up-requests': { type: 'string', default: '0' },
      seed: { type: 'string' },
      'evenlb-demo': { type: 'string' },
    },
  });
  const name = values.name ?? 'pod';
  const address = values.address ?? '127.0.0.1';
  let requests = 0;
  let openConnections = 0;
  let connectionsTotal = 0;
  let draining = false;
  const sockets = new Set<Socket>();

  // A connection counts once it carries a request for the application: peers' load-exchange
  // questions (answered by the recycler, never seen here) are not clients.
  const counted = new WeakSet<Socket>();
  const server = createServer((req, res) => {
    if (req.headers[WARM_UP_HEADER] !== undefined) {
      req.resume();
      res.end('warm\n');
      return;
    }
    requests++;
    if (!counted.has(req.socket)) {
      counted.add(req.socket);
      openConnections++;
      connectionsTotal++;
    }
    req.resume();
    const body = `${name}\n`;
    if (draining) res.setHeader('connection', 'close');
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  // Long-lived keep-alive connections are the point of the demo: do not let Node's 5 s default
  // idle timeout reshuffle them behind the clients' backs.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 130_000;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      if (counted.has(socket)) openConnections--;
      sockets.delete(socket);
    });
  });

  const maxRequests = values['recycle-max-requests'];
  const maxAge = values['recycle-max-age-ms'];
  const peers = values['fair-share-peers'];
  const metric = values['fair-share-load-metric'] as FairShareLoadMetric | undefined;
  const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
  if (maxRequests !== undefined || maxAge !== undefined || peers !== undefined) {
    recycleConnections(server, {
      ...(maxRequests === undefined ? {} : { maxRequestsPerConnection: Number(maxRequests) }),
      ...(maxAge === undefined ? {} : { maxConnectionAgeMs: Number(maxAge) }),
      ...(values['recycle-grace-ms'] === undefined ? {} : { graceMs: Number(values['recycle-grace-ms']) }),
      ...(values.seed === undefined ? {} : { random: new SeededRandom(Number(values.seed)) }),
      ...(peers === undefined
        ? {}
        : {
            fairShare: {
              peers,
              self: address,
              ...optional('tolerance', num(values['fair-share-tolerance'])),
              ...optional('periodMs', num(values['fair-share-period-ms'])),
              ...optional('windowMs', num(values['fair-share-window-ms'])),
              ...optional('warmupMs', num(values['fair-share-warmup-ms'])),
              ...optional('cooldownMs', num(values['fair-share-cooldown-ms'])),
              ...optional('maxShedFraction', num(values['fair-share-max-shed-fraction'])),
              ...optional('peersPerPeriod', num(values['fair-share-peers-per-period'])),
              ...optional('peerTtlMs', num(values['fair-share-peer-ttl-ms'])),
              ...(metric === undefined ? {} : { loadMetric: metric }),
            },
          }),
    });
  }

  const report = (): void => sendToParent({ type: 'stats', requests, openConnections, connectionsTotal });
  const timer = setInterval(report, STATS_INTERVAL_MS);
  timer.unref();

  const stop = (graceMs: number): void => {
    if (draining) return;
    draining = true;
    const deadline = systemClock.now() + graceMs;
    const poll = setInterval(() => {
      if (openConnections > 0 && systemClock.now() < deadline) return;
      clearInterval(poll);
      for (const s of sockets) s.destroy();
      server.close();
      report();
      sendToParent({ type: 'stopped' });
      // Let stdout flush before leaving.
      setImmediate(() => process.exit(0));
    }, 20);
  };

  listenToParent((message) => {
    if (message.type === 'stop') stop(typeof message.graceMs === 'number' ? message.graceMs : 1000);
  });

  server.listen({ host: address, port: Number(values.port) }, () => {
    const port = (server.address() as AddressInfo).port;
    const warmUpCount = Number(values['warm-up-requests']);
    warmUp(address, port, warmUpCount)
      .then(() => (peers === undefined ? undefined : warmUpLoadExchange(address, port, warmUpCount / 24, metric)))
      .then(
        () => sendToParent({ type: 'listening', address, port, pid: process.pid }),
        (err: unknown) => {
          sendToParent({
            type: 'error',
            message: `warm-up failed: ${err instanceof Error ? err.message : String(err)}`,
          });
          process.exit(1);
        },
      );
  });
  server.on('error', (err) => {
    sendToParent({ type: 'error', message: err.message });
    process.exit(1);
  });
}

main().catch((err: unknown) => {
  sendToParent({ type: 'error', message: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
