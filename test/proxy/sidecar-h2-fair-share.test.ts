/**
 * The server-side sidecar with gRPC-style clients, on real sockets: plain h2c apps (node:http2
 * only) each fronted by a sidecar (`h2c://` app, fair share on the connections each holds, peers
 * from a watched file:/// list), reached through a kube-proxy-like front that pins every new
 * connection to a random pod. Sixteen HTTP/2 clients hold one connection each, with two streams
 * in flight at all times; when a session gets GOAWAY the client opens a new one for its next
 * streams, as gRPC channels do. After a scale-out from three pods to four, the sidecars shed by
 * GOAWAY until every pod holds its fair share of the connections (within 15%, counted by each
 * sidecar: the front's client-side sockets of a finished session may linger), and every
 * stream that was in flight on a session when its GOAWAY arrived completes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../support/tracked-server.js';
import { fetchText, waitFor } from './helpers.js';
import {
  EndpointsFile,
  endpointOf,
  PinningFront,
  type PlainApp,
  startPlainApp,
  startSidecar,
  type TestSidecar,
} from './sidecar-support.js';

const ADDRESSES = ['127.0.0.81', '127.0.0.82', '127.0.0.83', '127.0.0.84'] as const;
const CLIENTS = 16;
const STREAMS_PER_CLIENT = 2;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface StreamOutcome {
  readonly ok: boolean;
  readonly detail: string;
}

/**
 * A gRPC-channel-like HTTP/2 client: one session at a time; after GOAWAY its next streams go
 * to a new session, the streams already open finish on the old one. A stream the server
 * refused (never processed) is sent again, as gRPC does.
 */
class H2Caller {
  readonly #origin: string;
  #session: http2.ClientHttp2Session | undefined;
  /** Attempts in flight, each with its session and the call it belongs to. */
  readonly #pending = new Set<{
    session: http2.ClientHttp2Session;
    attempt: Promise<StreamOutcome>;
    call: Promise<StreamOutcome>;
  }>();
  sessions = 0;
  refusedRetries = 0;
  /** Attempts open on a session when its GOAWAY arrived (each completes, or is refused unprocessed). */
  readonly attemptsAtGoaway: Promise<StreamOutcome>[] = [];
  /** The calls those attempts belong to (each must complete, after a refused stream is sent again). */
  readonly callsAtGoaway: Promise<StreamOutcome>[] = [];

  constructor(origin: string) {
    this.#origin = origin;
  }

  #current(): http2.ClientHttp2Session {
    const s = this.#session;
    if (s !== undefined && !s.closed && !s.destroyed) return s;
    const session = http2.connect(this.#origin);
    session.on('error', () => {});
    session.once('goaway', () => {
      if (this.#session === session) this.#session = undefined;
      for (const p of this.#pending) {
        if (p.session !== session) continue;
        this.attemptsAtGoaway.push(p.attempt);
        this.callsAtGoaway.push(p.call);
      }
      // As a gRPC channel does: the transport closes once its last stream has finished.
      session.close();
    });
    this.#session = session;
    this.sessions++;
    return session;
  }

  get(path: string): Promise<StreamOutcome> {
    let settle!: (o: StreamOutcome) => void;
    const call = new Promise<StreamOutcome>((resolve) => {
      settle = resolve;
    });
    void (async () => {
      for (let attempt = 1; ; attempt++) {
        const outcome = await this.#once(path, call);
        if (outcome.ok || !outcome.detail.startsWith('refused') || attempt >= 5) return settle(outcome);
        this.refusedRetries++;
      }
    })();
    return call;
  }

  #once(path: string, call: Promise<StreamOutcome>): Promise<StreamOutcome> {
    let session: http2.ClientHttp2Session;
    let stream: http2.ClientHttp2Stream;
    try {
      session = this.#current();
      stream = session.request({ ':path': path, ':authority': 'app.test', 'content-type': 'application/grpc' });
    } catch (err) {
      // A session that went away between the check and the request: nothing was sent.
      this.#session = undefined;
      return Promise.resolve({ ok: false, detail: `refused before sending: ${(err as Error).message}` });
    }
    const attempt = new Promise<StreamOutcome>((resolve) => {
      let status = 0;
      stream.on('response', (h) => {
        status = Number(h[':status']);
      });
      stream.resume();
      stream.on('end', () => resolve({ ok: status === 200, detail: `status ${status}` }));
      stream.on('error', (err) =>
        resolve({
          ok: false,
          detail: stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM ? 'refused stream' : `error ${err.message}`,
        }),
      );
      stream.end();
    });
    const entry = { session, attempt, call };
    this.#pending.add(entry);
    void attempt.then(() => this.#pending.delete(entry));
    return attempt;
  }

  close(): void {
    this.#session?.close();
  }
}

/** Client connections (sockets and HTTP/2 sessions) a sidecar holds now, from its own /metrics. */
async function held(s: TestSidecar): Promise<number> {
  return metric(s, 'evenlb_proxy_downstream_connections');
}

async function metric(s: TestSidecar, name: string): Promise<number> {
  const m = await fetchText(s.proxy.adminPort as number, '/metrics');
  return Number(new RegExp(`^${name}\\{listener="sidecar"\\} (\\d+)`, 'm').exec(m.body)?.[1]);
}

async function startFleet(dir: string) {
  const peers = new EndpointsFile(join(dir, 'endpoints.json'));
  const loadPort = await freePort(ADDRESSES[0]);
  const apps: PlainApp[] = [];
  const sidecars: TestSidecar[] = [];
  for (const [i, address] of ADDRESSES.entries()) {
    const app = await startPlainApp(address, { protocol: 'h2', delayMs: 40, name: `pod-${i + 1}` });
    apps.push(app);
    cleanups.push(() => app.close());
    const sidecar = await startSidecar(
      {
        listen: `${address}:0`,
        app: `h2c://${address}:${app.port}`,
        peers: peers.uri,
        self: address,
        loadPort,
        loadHost: address,
        appCheck: { intervalMs: 200, timeoutMs: 150 },
        drainTimeoutMs: 2000,
        fairShare: {
          loadMetric: 'connections',
          periodMs: 200,
          windowMs: 600,
          warmupMs: 600,
          cooldownMs: 100,
          maxShedFraction: 0.5,
          peersPerPeriod: 4,
          peerTtlMs: 1000,
        },
      },
      10 + i,
    );
    sidecars.push(sidecar);
    cleanups.push(() => sidecar.close());
  }
  return { peers, apps, sidecars };
}

describe('server-side sidecar, HTTP/2 (gRPC-style) clients', () => {
  it('spreads one connection per client to within 15% of fair after a scale-out; streams in flight at GOAWAY complete', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'evenlb-sidecar-h2-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const { peers, apps, sidecars } = await startFleet(dir);
    const [s1, s2, s3, s4] = sidecars as [TestSidecar, TestSidecar, TestSidecar, TestSidecar];
    await waitFor(() => sidecars.every((s) => s.health.notReady() === undefined), 10_000, 'every app answering');

    const front = new PinningFront(27);
    for (const s of [s1, s2, s3]) front.add(s.address, s.port);
    const frontPort = await front.listen();
    cleanups.push(() => front.close());
    peers.write([s1, s2, s3].map((s) => endpointOf(s)));

    const callers = Array.from({ length: CLIENTS }, () => new H2Caller(`http://127.0.0.1:${frontPort}`));
    let running = true;
    const outcomes: StreamOutcome[] = [];
    const deadline = Date.now() + 60_000;
    const loops = callers.flatMap((c) =>
      Array.from({ length: STREAMS_PER_CLIENT }, async () => {
        while (running && Date.now() < deadline) {
          outcomes.push(await c.get('/echo.Echo/Say'));
          await new Promise((r) => setTimeout(r, 10));
        }
      }),
    );
    cleanups.push(async () => {
      running = false;
      await Promise.all(loops);
      for (const c of callers) c.close();
    });

    await waitFor(() => outcomes.length >= 200, 15_000, 'the first streams');
    const before = await Promise.all([s1, s2, s3].map(held));
    const servedBefore = apps.map((a) => a.requests);

    // Scale-out: the fourth pod is listed (Ready) and kube-proxy starts sending it connections.
    const scaledAt = Date.now();
    front.add(s4.address, s4.port);
    peers.write(sidecars.map((s) => endpointOf(s)));
    const fair = CLIENTS / sidecars.length;
    let spread: number[] = [];
    const withinFair = async (): Promise<boolean> => {
      spread = await Promise.all(sidecars.map(held));
      return spread.every((n) => Math.abs(n - fair) <= 0.15 * fair);
    };
    await waitFor(withinFair, 30_000, `every pod within 15% of ${fair} connections`).catch((err: Error) => {
      throw new Error(`${err.message}: ${spread.join('/')}`);
    });
    const convergedMs = Date.now() - scaledAt;
    // Every pod now serves streams, the new one included.
    await new Promise((r) => setTimeout(r, 1000));
    const served = apps.map((a, i) => a.requests - (servedBefore[i] as number));

    running = false;
    await Promise.all(loops);
    for (const c of callers) c.close();
    const attemptsAtGoaway = await Promise.all(callers.flatMap((c) => c.attemptsAtGoaway));
    const callsAtGoaway = await Promise.all(callers.flatMap((c) => c.callsAtGoaway));
    const completedOnOldSession = attemptsAtGoaway.filter((o) => o.ok).length;
    const failed = outcomes.filter((o) => !o.ok);
    const shed = sidecars.map((s) => s.proxy.listenerFairShare('sidecar')?.shed ?? 0);

    console.log(
      `h2 sidecar: ${CLIENTS} clients, connections ${before.join('/')} on 3 pods → ${spread.join('/')} on 4 ` +
        `${convergedMs} ms after the scale-out; ${outcomes.length} streams, ${failed.length} failed, ` +
        `${attemptsAtGoaway.length} in flight at a GOAWAY (${completedOnOldSession} completed on the old session, ` +
        `the rest refused unprocessed and sent again: ${callers.reduce((a, c) => a + c.refusedRetries, 0)} in all); ` +
        `sessions ${callers.reduce((a, c) => a + c.sessions, 0)}; shed ${shed.join('/')}; streams served since ${served.join('/')}`,
    );
    expect(spread.every((n) => Math.abs(n - fair) <= 0.15 * fair)).toBe(true);
    expect(front.placed[3]).toBeGreaterThan(0);
    // Every connection the front placed was accepted and counted by its sidecar.
    const opened = await Promise.all(
      sidecars.map((x) => metric(x, 'evenlb_proxy_downstream_connections_opened_total')),
    );
    expect(opened).toEqual(front.placed);
    expect(served[3], 'the new pod serves streams').toBeGreaterThan(0);
    expect(failed, failed.map((f) => f.detail).join(', ')).toEqual([]);
    expect(
      shed.reduce((a, b) => a + b, 0),
      'some session was shed with GOAWAY',
    ).toBeGreaterThan(0);
    expect(completedOnOldSession, 'streams in flight when a GOAWAY arrived finished on that session').toBeGreaterThan(
      0,
    );
    // Nothing in flight at a GOAWAY was cut: each finished, or was refused before the app saw
    // it (REFUSED_STREAM) and then finished when sent again, as gRPC's transparent retry does.
    expect(attemptsAtGoaway.filter((o) => !o.ok && o.detail !== 'refused stream')).toEqual([]);
    expect(callsAtGoaway.filter((o) => !o.ok)).toEqual([]);
  }, 90_000);
});
