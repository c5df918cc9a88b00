/**
 * undici's close/destroy contract for the proxy (`ProxyServer`: its listeners, admin servers
 * and clusters), tried as a user would against real upstream servers on loopback, for each
 * data path: the proxy's own HTTP/1.1 path to plain and TLS upstreams, h2c clients (node:http2
 * → the cluster's pools), HTTP/1.0 clients (node:http hand-off), `h2` clusters (HTTP/2
 * sessions) and L4 `tcp` listeners.
 *
 * - `close()` stops accepting, lets in-flight requests finish (a slow upstream's answer still
 *   arrives), waits while an upstream hangs, and always settles — also after an upstream TLS
 *   failure or a refused connect;
 * - `destroy()` fails in-flight work, settles within a second and also settles a pending
 *   `close()`;
 * - both are idempotent, in either order;
 * - afterwards nothing is left running: no socket, server, HTTP/2 session or timer created by
 *   the proxy (tracked with async_hooks, so `unref()`ed ones count too).
 */

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { normalizeProxyConfig } from '../../src/proxy/config/proxy-config.js';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { LiveResources } from '../support/live-resources.js';
import { testCertificates } from '../support/test-certificates.js';
import { freePort, listenTracked } from '../support/tracked-server.js';
import { startProxy, waitFor } from './helpers.js';

/** The contract's bound for `destroy()`. */
const SETTLE_MS = 1_000;
/** How long a hung request must keep `close()` pending to count as "waits". */
const PENDING_MS = 150;
/** The slow upstream's answer delay: `close()` is called while it is in flight. */
const SLOW_MS = 300;

type Mode = 'answer' | 'slow' | 'hang';
type UpstreamKind = 'http1' | 'tls' | 'h2';

const pki = testCertificates('backend.internal', 'proxy-lifecycle');
const mismatch = testCertificates('other.internal', 'proxy-lifecycle');
const dir = mkdtempSync(join(tmpdir(), 'evenlb-proxy-lifecycle-'));
const caFile = join(dir, 'ca.crt');
writeFileSync(caFile, pki.ca);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Upstream {
  readonly port: number;
  /** Requests received so far. */
  readonly received: number;
  close(): Promise<void>;
}

/** A real upstream of `kind` on 127.0.0.1; `certName` picks its TLS certificate. */
async function startUpstream(kind: UpstreamKind, mode: Mode, certName = 'backend.internal'): Promise<Upstream> {
  let received = 0;
  const handler = (_req: unknown, res: http.ServerResponse | http2.Http2ServerResponse): void => {
    received++;
    if (mode === 'hang') return;
    const answer = (): void => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok\n');
    };
    if (mode === 'slow') setTimeout(answer, SLOW_MS);
    else answer();
  };
  const certs = certName === 'backend.internal' ? pki : mismatch;
  const server: net.Server =
    kind === 'h2'
      ? http2.createServer(handler)
      : kind === 'tls'
        ? https.createServer({ key: certs.key, cert: certs.cert }, handler)
        : http.createServer(handler);
  const tracked = await listenTracked(server, '127.0.0.1', kind === 'tls' ? 'secureConnection' : 'connection');
  return {
    port: tracked.port,
    get received() {
      return received;
    },
    close: tracked.close,
  };
}

/** One request through the proxy: resolves with the status ('200') or the error code. */
type Call = (port: number) => Promise<string>;

const errorCode = (e: unknown): string => (e as { code?: string }).code ?? String(e);

function http1Call(version: '1.1' | '1.0'): Call {
  return (port) =>
    new Promise<string>((resolve) => {
      // node:http cannot send HTTP/1.0; write the request by hand for that path.
      if (version === '1.0') {
        const s = net.connect(port, '127.0.0.1');
        let text = '';
        s.setEncoding('latin1');
        s.on('data', (c: string) => (text += c));
        s.on('error', (e) => resolve(errorCode(e)));
        s.on('close', () => resolve(text === '' ? 'closed' : (text.split(' ')[1] ?? text)));
        s.write('GET / HTTP/1.0\r\nHost: app.test\r\n\r\n');
        return;
      }
      const req = http.request(
        { host: '127.0.0.1', port, path: '/', agent: false, headers: { host: 'app.test' } },
        (res) => {
          res.resume();
          res.once('end', () => resolve(String(res.statusCode)));
          res.once('error', (e) => resolve(errorCode(e)));
        },
      );
      req.once('error', (e) => resolve(errorCode(e)));
      req.end();
    });
}

const h2cCall: Call = (port) =>
  new Promise<string>((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', (e) => resolve(errorCode(e)));
    const stream = session.request({ ':path': '/', ':authority': 'app.test' });
    let status = '';
    stream.on('response', (h) => (status = String(h[':status'])));
    stream.on('error', (e) => resolve(errorCode(e)));
    stream.resume();
    stream.on('close', () => {
      session.close();
      resolve(status === '' ? 'closed' : status);
    });
    stream.end();
  });

interface Subject {
  readonly name: string;
  readonly upstream: UpstreamKind;
  readonly call: Call;
  /** Builds the proxy configuration for an upstream on `port`. */
  config(port: number): unknown;
}

const cluster = (port: number, extra: Record<string, unknown> = {}) => ({
  name: 'app',
  target: `static:///127.0.0.1:${port}`,
  retries: { idempotent: 0, connectFailures: 0 },
  ...extra,
});
const l7 = (port: number, extra: Record<string, unknown> = {}) => ({
  listeners: [{ name: 'web', address: '127.0.0.1:0' }],
  clusters: [cluster(port, extra)],
  routes: [{ hosts: ['app.test'], cluster: 'app' }],
  admin: { address: '127.0.0.1:0', metricsAddress: '127.0.0.1:0' },
  drainTimeoutMs: 30_000,
});

const subjects: readonly Subject[] = [
  { name: 'HTTP/1.1 → http1 cluster', upstream: 'http1', call: http1Call('1.1'), config: (p) => l7(p) },
  {
    name: 'HTTP/1.1 → TLS cluster',
    upstream: 'tls',
    call: http1Call('1.1'),
    config: (p) => l7(p, { tls: { ca: caFile, servername: 'backend.internal' } }),
  },
  { name: 'HTTP/1.0 → http1 cluster', upstream: 'http1', call: http1Call('1.0'), config: (p) => l7(p) },
  { name: 'h2c → http1 cluster', upstream: 'http1', call: h2cCall, config: (p) => l7(p) },
  { name: 'HTTP/1.1 → h2 cluster', upstream: 'h2', call: http1Call('1.1'), config: (p) => l7(p, { protocol: 'h2' }) },
  {
    name: 'tcp listener',
    upstream: 'http1',
    call: http1Call('1.1'),
    config: (p) => ({
      listeners: [{ name: 'l4', address: '127.0.0.1:0', protocol: 'tcp', cluster: 'app' }],
      clusters: [cluster(p)],
      drainTimeoutMs: 30_000,
    }),
  },
];

/** What goes wrong before `close()`; `expectOk` = the first call answers 200. */
const befores = [
  { name: 'a normal request', upstream: 'ok', expectOk: true },
  { name: 'a refused upstream connect', upstream: 'refused', expectOk: false },
  { name: 'an upstream TLS name mismatch', upstream: 'tls-mismatch', expectOk: false },
] as const;

/** Resolves with how the promise settled, or 'pending' if it has not within `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<'resolved' | 'rejected' | 'pending'> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve('pending'), ms);
    p.then(
      () => {
        clearTimeout(t);
        resolve('resolved');
      },
      () => {
        clearTimeout(t);
        resolve('rejected');
      },
    );
  });
}

function portOf(proxy: ProxyServer): number {
  return proxy.listenerPort('web') ?? (proxy.listenerPort('l4') as number);
}

describe('ProxyServer close/destroy contract', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  let live: LiveResources | undefined;
  afterEach(async () => {
    live?.stop();
    live = undefined;
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  /** Starts tracking, then the proxy; returns it. */
  async function start(subject: Subject, upstreamPort: number): Promise<ProxyServer> {
    live = LiveResources.start();
    const proxy = await startProxy(subject.config(upstreamPort));
    cleanup.push(() => proxy.destroy());
    return proxy;
  }

  /** Everything the proxy opened is gone (bounded wait: sockets report closed a tick later). */
  async function nothingLeft(): Promise<void> {
    const tracker = live as LiveResources;
    await waitFor(() => tracker.remaining().length === 0, 3_000, 'no live resource').catch(() => undefined);
    expect(tracker.remaining()).toEqual([]);
  }

  // Regression: a reload left the replaced cluster's delayed close (a 5 s timer) and the
  // replaced listener's drain running after the proxy itself had closed.
  test('close() right after a reload also closes the replaced listener and cluster; nothing left', async () => {
    const upstream = await startUpstream('http1', 'answer');
    cleanup.push(() => upstream.close());
    const subject = subjects[0] as Subject;
    const proxy = await start(subject, upstream.port);
    expect(await subject.call(portOf(proxy))).toBe('200');
    const next = l7(upstream.port, { policy: 'round-robin' }) as { listeners: Record<string, unknown>[] };
    next.listeners = [{ name: 'web', address: '127.0.0.1:0', limits: { idleTimeoutMs: 30_000 } }];
    await proxy.reload(normalizeProxyConfig(next));
    expect(await subject.call(portOf(proxy))).toBe('200');
    expect(await within(proxy.close(), SETTLE_MS * 5)).toBe('resolved');
    await nothingLeft();
  });

  // Regression: a drain closed idle keep-alive connections at once, so a client writing its next
  // request at that moment (steady keep-alive traffic at a SIGTERM) got a reset. Now the next
  // request on such a connection is answered, with `Connection: close`, and the connection ends
  // — on the raw HTTP/1.1 data path and on the node:http side it hands requests for h2 clusters
  // to (HTTP/1.0 clients are not kept alive there: their responses are delimited by the close).
  test.each(subjects.filter((s) => s.name === 'HTTP/1.1 → http1 cluster' || s.name === 'HTTP/1.1 → h2 cluster'))(
    'close(): $name: a keep-alive connection idle when the drain starts gets its next request answered with Connection: close',
    async (subject) => {
      const request = 'GET / HTTP/1.1\r\nHost: app.test\r\n\r\n';
      const upstream = await startUpstream(subject.upstream, 'answer');
      cleanup.push(() => upstream.close());
      const proxy = await start(subject, upstream.port);
      const socket = net.connect(portOf(proxy), '127.0.0.1');
      socket.setEncoding('latin1');
      let text = '';
      socket.on('data', (c: string) => (text += c));
      socket.on('error', () => {});
      const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.write(request);
      await waitFor(() => text.includes('ok\n'), 3_000, 'the first response');
      expect(text).not.toMatch(/connection: close/i);
      text = '';
      const closing = proxy.close();
      // The client's next request, 50 ms into the drain (the drain polls every 50 ms).
      await new Promise((r) => setTimeout(r, 50));
      socket.write(request);
      await ended;
      expect(text).toMatch(/^HTTP\/1\.1 200 /);
      expect(text).toMatch(/\r\nconnection: close\r\n/i);
      expect(text).toContain('ok\n');
      expect(await within(closing, SETTLE_MS * 5)).toBe('resolved');
      expect(upstream.received).toBe(2);
    },
  );

  for (const subject of subjects) {
    for (const before of befores) {
      if (before.upstream === 'tls-mismatch' && subject.upstream !== 'tls') continue;
      test(`${subject.name}: close() settles after ${before.name}; new connections are refused; nothing left`, async () => {
        const upstream = await startUpstream(
          subject.upstream,
          'answer',
          before.upstream === 'tls-mismatch' ? 'other.internal' : 'backend.internal',
        );
        cleanup.push(() => upstream.close());
        const port = before.upstream === 'refused' ? await freePort() : upstream.port;
        const proxy = await start(subject, port);
        const first = await subject.call(portOf(proxy));
        if (before.expectOk) expect(first).toBe('200');
        else expect(first).not.toBe('200');
        const listenPort = portOf(proxy);
        expect(await within(proxy.close(), SETTLE_MS * 5)).toBe('resolved');
        expect(await subject.call(listenPort)).toMatch(/ECONNREFUSED|ERR_HTTP2_STREAM_CANCEL/);
        expect(await within(proxy.close(), SETTLE_MS)).toBe('resolved');
        expect(await within(proxy.destroy(), SETTLE_MS)).toBe('resolved');
        await nothingLeft();
      });
    }

    test(`${subject.name}: close() lets an in-flight request finish`, async () => {
      const upstream = await startUpstream(subject.upstream, 'slow');
      cleanup.push(() => upstream.close());
      const proxy = await start(subject, upstream.port);
      const inFlight = subject.call(portOf(proxy));
      await waitFor(() => upstream.received === 1, 5_000, 'the request at the upstream');
      const closing = proxy.close();
      expect(await inFlight).toBe('200');
      expect(await within(closing, SETTLE_MS * 5)).toBe('resolved');
      await nothingLeft();
    });

    test(`${subject.name}: a hung upstream holds close(); destroy() fails it, settles within 1 s and settles close()`, async () => {
      const upstream = await startUpstream(subject.upstream, 'hang');
      cleanup.push(() => upstream.close());
      const proxy = await start(subject, upstream.port);
      const hung = subject.call(portOf(proxy));
      await waitFor(() => upstream.received === 1, 5_000, 'the request at the upstream');
      const closing = proxy.close();
      expect(await within(closing, PENDING_MS)).toBe('pending');
      const destroying = proxy.destroy();
      expect(await within(destroying, SETTLE_MS)).toBe('resolved');
      expect(await within(closing, SETTLE_MS)).toBe('resolved');
      expect(await within(hung, SETTLE_MS)).toBe('resolved');
      expect(await hung).not.toBe('200');
      expect(await within(proxy.destroy(), SETTLE_MS)).toBe('resolved');
      expect(await within(proxy.close(), SETTLE_MS)).toBe('resolved');
      await nothingLeft();
    });
  }
});
