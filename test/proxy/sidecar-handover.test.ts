/**
 * A terminating pod hands its clients over before it stops: on real sockets, two plain
 * HTTP/1.1 apps each fronted by a sidecar, eight pinned keep-alive clients (undici, one
 * connection each) reaching them through a kube-proxy-like front. When the Service lists pod A
 * as terminating (its pod is being deleted; kube-proxy sends it no new connection), A's sidecar
 * retires every client connection with `Connection: close` on its next response, the clients
 * re-dial to B, and A's sidecar then stops (SIGTERM's drain) holding no connection: no
 * request fails. Before the hand-over, A kept its clients until the drain closed them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'undici';
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

const ADDRESSES = ['127.0.0.91', '127.0.0.92'] as const;
const CLIENTS = 8;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function held(s: TestSidecar): Promise<number> {
  const m = await fetchText(s.proxy.adminPort as number, '/metrics');
  return Number(/^evenlb_proxy_downstream_connections\{listener="sidecar"\} (\d+)/m.exec(m.body)?.[1]);
}

describe('server-side sidecar: a terminating pod', () => {
  it('retires its client connections (Connection: close) before its drain, without a failed request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'evenlb-sidecar-handover-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const peers = new EndpointsFile(join(dir, 'endpoints.json'));
    const loadPort = await freePort(ADDRESSES[0]);
    const apps: PlainApp[] = [];
    const sidecars: TestSidecar[] = [];
    for (const [i, address] of ADDRESSES.entries()) {
      const app = await startPlainApp(address, { name: `pod-${i + 1}` });
      apps.push(app);
      cleanups.push(() => app.close());
      const sidecar = await startSidecar({
        listen: `${address}:0`,
        app: `${address}:${app.port}`,
        peers: peers.uri,
        self: address,
        loadPort,
        loadHost: address,
        appCheck: { intervalMs: 200, timeoutMs: 150 },
        drainTimeoutMs: 5000,
        // Never shed for balance here: only the hand-over moves clients.
        fairShare: { tolerance: 10, warmupMs: 0 },
      });
      sidecars.push(sidecar);
      cleanups.push(() => sidecar.close());
    }
    const [a, b] = sidecars as [TestSidecar, TestSidecar];
    peers.write(sidecars.map((s) => endpointOf(s)));
    const front = new PinningFront(5);
    front.add(a.address, a.port);
    const frontPort = await front.listen();
    cleanups.push(() => front.close());

    let running = true;
    let ok = 0;
    let closes = 0;
    const errors: string[] = [];
    const clients = Array.from(
      { length: CLIENTS },
      () => new Client(`http://127.0.0.1:${frontPort}`, { keepAliveTimeout: 60_000, pipelining: 1 }),
    );
    const deadline = Date.now() + 40_000;
    const loops = clients.map(async (c) => {
      while (running && Date.now() < deadline) {
        try {
          const res = await c.request({ path: '/', method: 'GET', headers: { host: 'app.test' } });
          await res.body.text();
          if (res.statusCode === 200) ok++;
          else errors.push(`status ${res.statusCode}`);
          if (res.headers.connection === 'close') closes++;
        } catch (err) {
          errors.push(`${String((err as { code?: string }).code)} ${(err as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    cleanups.push(async () => {
      running = false;
      await Promise.all(loops);
      await Promise.all(clients.map((c) => c.close()));
    });
    // Every client pinned to A (the only pod in the rules so far), then B joins the rules.
    await waitFor(async () => (await held(a)) === CLIENTS && ok >= 4 * CLIENTS, 15_000, 'every client on A');
    front.add(b.address, b.port);

    // Pod A is being deleted: its endpoint turns terminating and kube-proxy drops it.
    const servedByA = apps[0]?.requests ?? 0;
    front.setReady(a.address, false);
    peers.write([endpointOf(a, true), endpointOf(b)]);
    const markedAt = Date.now();
    await waitFor(async () => (await held(a)) === 0, 10_000, 'A to hold no client connection');
    const handedOverMs = Date.now() - markedAt;
    await waitFor(async () => (await held(b)) === CLIENTS, 10_000, 'every client on B');
    const okBeforeDrain = ok;
    // SIGTERM's drain on A finds nothing to cut.
    await a.close();
    await waitFor(() => ok >= okBeforeDrain + 2 * CLIENTS, 10_000, 'requests after the drain');
    running = false;
    await Promise.all(loops);

    console.log(
      `hand-over: ${CLIENTS} clients left the terminating pod in ${handedOverMs} ms ` +
        `(${closes} responses with Connection: close); ${ok} requests ok, ${errors.length} failed; ` +
        `A served ${apps[0]?.requests} (${(apps[0]?.requests ?? 0) - servedByA} after it was marked), B ${apps[1]?.requests}`,
    );
    expect(errors).toEqual([]);
    expect(closes).toBeGreaterThanOrEqual(CLIENTS);
    expect(front.placed[1]).toBe(CLIENTS);
    expect(apps[1]?.requests).toBeGreaterThan(0);
  }, 60_000);
});
