/**
 * `HttpLoadProber` against real loopback servers: an answer lands in the endpoint's load record;
 * a slow, oversized, non-200 or malformed answer, or a refused connection, is a failed probe that
 * leaves the record as it was; one probe per endpoint at a time, at most `maxConcurrent` in
 * flight and `maxQueued` waiting (more are skipped), an endpoint no longer eligible is never
 * asked; `close()` aborts what is in flight and always settles.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LoadTracker } from '../../src/balancing/endpoint-load.js';
import type { TrackedEndpoint } from '../../src/balancing/picker.js';
import { loadProbesSpec } from '../../src/cluster/cluster-options.js';
import { HttpLoadProber } from '../../src/cluster/http-load-prober.js';
import { systemClock } from '../../src/core/clock.js';
import { createEndpoint } from '../../src/core/endpoint.js';
import { parseOptions } from '../../src/core/options.js';
import { nextLoopbackAddress } from '../support/loopback-pods.js';

type Answer = (req: http.IncomingMessage, res: http.ServerResponse) => void;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(answer: Answer): Promise<{ address: string; port: number; asked: () => number }> {
  let asked = 0;
  const s = http.createServer((req, res) => {
    asked++;
    answer(req, res);
  });
  const address = nextLoopbackAddress();
  await new Promise<void>((resolve) => s.listen(0, address, resolve));
  cleanups.push(async () => {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  });
  return { address, port: (s.address() as AddressInfo).port, asked: () => asked };
}

const tracker = new LoadTracker(systemClock);

function target(address: string, port: number): TrackedEndpoint {
  const endpoint = createEndpoint({ address, port });
  return { endpoint, weight: 1, load: tracker.get(endpoint.key), result: { endpoint } } as unknown as TrackedEndpoint;
}

function prober(options: Record<string, unknown> = {}, probeable: (key: string) => boolean = () => true) {
  const results: string[] = [];
  const p = new HttpLoadProber({
    options: parseOptions('loadProbes', { timeoutMs: 300, ...options }, loadProbesSpec),
    clock: systemClock,
    probeable,
    onResult: (_key, result) => results.push(result),
  });
  cleanups.push(() => p.close());
  return { p, results };
}

async function settled(p: HttpLoadProber): Promise<void> {
  const deadline = performance.now() + 5_000;
  await new Promise((r) => setTimeout(r, 10));
  while (p.stats().inFlight > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

const document =
  (body: string): Answer =>
  (_req, res) =>
    res.writeHead(200).end(body);

describe('HttpLoadProber', () => {
  it('records a well-formed answer in the load record', async () => {
    const s = await server(document('{"protocol":"evenlb-load/1","inFlight":3,"latencyMs":12.5}'));
    const { p, results } = prober();
    const t = target(s.address, s.port);
    p.probe(t);
    await settled(p);
    expect(results).toEqual(['sent', 'answered']);
    expect(t.load.reported('probeInFlight')).toBe(3);
    expect(t.load.reported('probeLatencyMs')).toBe(12.5);
  });

  it.each([
    ['without latencyMs (a server that has completed nothing yet)', '{"protocol":"evenlb-load/1","inFlight":0}'],
    ['with latencyMs 0 (what older servers answered then)', '{"protocol":"evenlb-load/1","inFlight":0,"latencyMs":0}'],
  ])('records an answer %s with its latency unknown (NaN), not 0', async (_name, body) => {
    const s = await server(document(body));
    const { p, results } = prober();
    const t = target(s.address, s.port);
    p.probe(t);
    await settled(p);
    expect(results).toEqual(['sent', 'answered']);
    expect(t.load.reported('probeInFlight')).toBe(0);
    expect(t.load.reported('probeLatencyMs')).toBeNaN();
  });

  it.each<[string, Answer]>([
    ['a slow answer', (_req, res) => setTimeout(() => res.writeHead(200).end('{}'), 2_000)],
    [
      'an oversized answer',
      document(`{"protocol":"evenlb-load/1","inFlight":1,"latencyMs":1,"pad":"${'x'.repeat(8_000)}"}`),
    ],
    ['a 404', (_req, res) => res.writeHead(404).end()],
    ['a document without the probe fields', document('{"protocol":"evenlb-load/1","metric":"in-flight","load":3}')],
    ['not JSON', document('<html>')],
  ])('%s is a failed probe, the record untouched', async (_name, answer) => {
    const s = await server(answer);
    const { p, results } = prober();
    const t = target(s.address, s.port);
    p.probe(t);
    await settled(p);
    expect(results).toEqual(['sent', 'failed']);
    expect(Number.isNaN(t.load.reported('probeInFlight'))).toBe(true);
  });

  it('a refused connection is a failed probe', async () => {
    const s = await server(document('{}'));
    await cleanups.pop()?.();
    const { p, results } = prober();
    p.probe(target(s.address, s.port));
    await settled(p);
    expect(results).toEqual(['sent', 'failed']);
  });

  it('one probe per endpoint at a time, maxConcurrent in flight, maxQueued waiting, the rest skipped', async () => {
    const servers = await Promise.all(
      Array.from({ length: 4 }, () =>
        server((_req, res) =>
          setTimeout(() => res.writeHead(200).end('{"protocol":"evenlb-load/1","inFlight":0,"latencyMs":1}'), 50),
        ),
      ),
    );
    const { p, results } = prober({ maxConcurrent: 1, maxQueued: 2 });
    const targets = servers.map((s) => target(s.address, s.port));
    for (const t of targets) p.probe(t);
    p.probe(targets[0] as TrackedEndpoint);
    // Queued: 0 and 1; 2 and 3 over maxQueued; the second ask for 0 is already waiting.
    expect(results).toEqual(['skipped', 'skipped', 'skipped']);
    await new Promise((r) => setTimeout(r, 5));
    expect(p.stats().inFlight).toBe(1);
    await settled(p);
    const deadline = performance.now() + 5_000;
    while (p.stats().answered < 2 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(p.stats()).toMatchObject({ sent: 2, answered: 2, failed: 0, skipped: 3, inFlight: 0 });
    expect(servers.map((s) => s.asked())).toEqual([1, 1, 0, 0]);
  });

  it('an endpoint no longer eligible when its turn comes is never asked', async () => {
    const s = await server(document('{}'));
    const { p, results } = prober({}, () => false);
    p.probe(target(s.address, s.port));
    await settled(p);
    expect(results).toEqual(['skipped']);
    expect(s.asked()).toBe(0);
  });

  it('close() aborts probes in flight and settles; later probes are dropped', async () => {
    const s = await server(() => {});
    const { p, results } = prober({ timeoutMs: 10_000 });
    p.probe(target(s.address, s.port));
    await new Promise((r) => setTimeout(r, 20));
    expect(p.stats().inFlight).toBe(1);
    await Promise.all([p.close(), p.close()]);
    await settled(p);
    p.probe(target(s.address, s.port));
    expect(results).toEqual(['sent', 'failed']);
    await p.destroy();
  });
});
