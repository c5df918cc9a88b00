/**
 * Every way Node code sends HTTP reaches the balancer: `undici.request`, `undici.fetch`, Node's
 * global `fetch` after `setGlobalDispatcher`, a `compose()`d dispatcher (new-style handlers),
 * and `node:http`/`node:https` through `createHttpAgent`. Requests spread over the pods, keep
 * the Service name as Host, and the caller's options and headers are not mutated. A caller with
 * a callback-style handler gets the raw header and trailer lists a plain undici `Client` gives it.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  Client,
  type Dispatcher,
  getGlobalDispatcher,
  request,
  setGlobalDispatcher,
  fetch as undiciFetch,
} from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { BalancedAgent, createHttpAgent, StaticEndpointSource } from '../../src/index.js';
import { type Pod, startPods, stopPods, waitFor } from '../support/loopback-pods.js';
import { testCertificates } from '../support/test-certificates.js';

const HOST = 'search.prod.svc';

function nodeGet(
  url: string,
  agent: http.Agent,
  options: https.RequestOptions = {},
): Promise<{ status: number; body: string }> {
  const lib = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(url, { agent, ...options }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: body.trim() }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('caller compatibility', () => {
  let pods: Pod[] = [];
  let agent: BalancedAgent | undefined;
  let previous: Dispatcher | undefined;
  afterEach(async () => {
    if (previous !== undefined) setGlobalDispatcher(previous);
    previous = undefined;
    await agent?.close();
    agent = undefined;
    await stopPods(pods);
  });

  const spread = () => pods.map((p) => p.requests);

  test('undici.request with object and flat-array headers; options are not mutated', async () => {
    pods = await startPods(3);
    agent = new BalancedAgent({
      routes: { [`${HOST}:80`]: new StaticEndpointSource(pods.map((p) => p.endpoint)) },
      policy: 'round-robin',
    });
    const headers = Object.freeze({ 'x-trace': 'a' });
    const options = Object.freeze({ dispatcher: agent, headers });
    for (let i = 0; i < 6; i++) {
      const res = await request(`http://${HOST}/obj`, options);
      expect(res.statusCode).toBe(200);
      await res.body.text();
    }
    const flat = ['x-trace', 'b'];
    for (let i = 0; i < 6; i++)
      await (await request(`http://${HOST}/arr`, { dispatcher: agent, headers: flat })).body.text();
    expect(flat).toEqual(['x-trace', 'b']);
    expect(headers).toEqual({ 'x-trace': 'a' });
    expect(spread()).toEqual([4, 4, 4]);
    for (const r of pods.flatMap((p) => p.log)) expect(r.host).toBe(HOST);
  });

  test('undici.fetch and the global fetch with setGlobalDispatcher', async () => {
    pods = await startPods(2);
    agent = new BalancedAgent({
      routes: { [`${HOST}:80`]: new StaticEndpointSource(pods.map((p) => p.endpoint)) },
      policy: 'round-robin',
    });
    for (let i = 0; i < 4; i++) {
      const res = await undiciFetch(`http://${HOST}/u`, { dispatcher: agent, method: 'POST', body: 'x' });
      expect(res.status).toBe(200);
      await res.text();
    }
    previous = getGlobalDispatcher();
    setGlobalDispatcher(agent);
    for (let i = 0; i < 4; i++) {
      const res = await globalThis.fetch(`http://${HOST}/g`, { headers: { 'x-n': String(i) } });
      expect(res.status).toBe(200);
      await res.text();
    }
    expect(spread()).toEqual([4, 4]);
    expect(
      pods
        .flatMap((p) => p.log)
        .filter((r) => r.url === '/u')
        .every((r) => r.body === 'x'),
    ).toBe(true);
    for (const r of pods.flatMap((p) => p.log)) expect(r.host).toBe(HOST);
  });

  test('a callback-style handler gets the raw headers and trailers a plain undici Client gives it', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      res.setHeader('Set-Cookie', ['a=1', 'b=2']);
      res.setHeader('X-Mixed-Case', 'Yes');
      res.setHeader('Trailer', 'X-Checksum');
      res.write('body');
      res.addTrailers({ 'X-Checksum': 'abc' });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const client = new Client(`http://127.0.0.1:${port}`);
    agent = new BalancedAgent({
      routes: { [`${HOST}:80`]: new StaticEndpointSource([{ address: '127.0.0.1', port }]) },
    });
    /** What a callback-style handler is handed, as text, without the `Date` header (it moves). */
    const raw = (dispatcher: Dispatcher, origin: string) =>
      new Promise<{ headers: string[]; trailers: string[] }>((resolve, reject) => {
        const seen = { headers: [] as string[], trailers: [] as string[] };
        dispatcher.dispatch({ origin, path: '/', method: 'GET' }, {
          onConnect() {},
          onHeaders(_status: number, headers: Buffer[]) {
            for (let i = 0; i < headers.length; i += 2) {
              const name = String(headers[i]);
              if (name.toLowerCase() !== 'date') seen.headers.push(name, String(headers[i + 1]));
            }
            return true;
          },
          onData: () => true,
          onComplete(trailers: Buffer[] | null) {
            seen.trailers = (trailers ?? []).map(String);
            resolve(seen);
          },
          onError: reject,
        } as unknown as Dispatcher.DispatchHandler);
      });
    try {
      const direct = await raw(client, `http://127.0.0.1:${port}`);
      const balanced = await raw(agent, `http://${HOST}`);
      expect(direct.headers.slice(0, 6)).toEqual(['Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'X-Mixed-Case', 'Yes']);
      expect(balanced).toEqual(direct);
      expect(balanced.trailers).toEqual(['X-Checksum', 'abc']);
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test('a compose()d dispatcher hands new-style handlers; they are balanced too', async () => {
    pods = await startPods(2);
    agent = new BalancedAgent({
      routes: { [`${HOST}:80`]: new StaticEndpointSource(pods.map((p) => p.endpoint)) },
      policy: 'round-robin',
    });
    const seen: string[] = [];
    const tagging: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
      seen.push(typeof handler.onRequestStart);
      return dispatch(opts, handler);
    };
    const composed = agent.compose(tagging);
    for (let i = 0; i < 4; i++) await (await request(`http://${HOST}/c`, { dispatcher: composed })).body.text();
    expect(seen.every((t) => t === 'function')).toBe(true);
    expect(spread()).toEqual([2, 2]);
  });

  test('unrouted origins pass through untouched', async () => {
    pods = await startPods(1);
    const pod = pods[0] as Pod;
    agent = new BalancedAgent({ routes: {} });
    const res = await request(`http://${pod.address}:${pod.port}/direct`, { dispatcher: agent });
    expect((await res.body.text()).trim()).toBe(pod.address);
    expect(pod.log[0]?.host).toBe(`${pod.address}:${pod.port}`);
    expect(agent.stats().routes).toEqual([]);
  });

  test.each(['RoundTripLoadBalancing=true', 'RoundTripLoadBalancing=false'])(
    'createHttpAgent with http.request (%s)',
    async (gate) => {
      pods = await startPods(4, { keepAliveTimeoutMs: 30_000 });
      const httpAgent = createHttpAgent({
        routes: { [`${HOST}:80`]: new StaticEndpointSource(pods.map((p) => p.endpoint)) },
        policy: 'round-robin',
        featureGates: gate,
      });
      try {
        for (let i = 0; i < 20; i++) expect((await nodeGet(`http://${HOST}/n`, httpAgent)).status).toBe(200);
        for (const r of pods.flatMap((p) => p.log)) expect(r.host).toBe(HOST);
        if (gate.endsWith('true')) expect(spread()).toEqual([5, 5, 5, 5]);
        // Legacy: one keep-alive socket keyed by the Service name carries everything.
        else expect(spread().sort((a, b) => b - a)).toEqual([20, 0, 0, 0]);
        const route = httpAgent.stats().routes[0];
        expect(route?.requests).toBe(20);
      } finally {
        await httpAgent.close();
      }
    },
  );

  test('createHttpAgent over https: SNI is the Service name; maxRequestsPerConnection is exact', async () => {
    const service = 'test-service.default.svc';
    const pki = testCertificates(service);
    pods = await startPods(2, { tls: pki, keepAliveTimeoutMs: 30_000 });
    const httpsAgent = createHttpAgent({
      protocol: 'https:',
      routes: { [`${service}:443`]: new StaticEndpointSource(pods.map((p) => p.endpoint)) },
      tls: { ca: pki.ca },
      policy: 'round-robin',
      maxRequestsPerConnection: 5,
    });
    try {
      for (let i = 0; i < 20; i++) expect((await nodeGet(`https://${service}/s`, httpsAgent)).status).toBe(200);
      expect(spread()).toEqual([10, 10]);
      for (const p of pods) expect([...p.requestsPerSocket.values()]).toEqual([5, 5]);
      for (const r of pods.flatMap((p) => p.log)) {
        expect(r.servername).toBe(service);
        expect(r.host).toBe(service);
      }
    } finally {
      await httpsAgent.close();
    }
  });

  test('createHttpAgent: an endpoint that leaves the set loses its idle sockets at once', async () => {
    pods = await startPods(2, { keepAliveTimeoutMs: 30_000 });
    const [a, b] = pods as [Pod, Pod];
    const source = new StaticEndpointSource([a.endpoint, b.endpoint]);
    const httpAgent = createHttpAgent({ routes: { [`${HOST}:80`]: source }, policy: 'round-robin' });
    try {
      for (let i = 0; i < 4; i++) await nodeGet(`http://${HOST}/`, httpAgent);
      expect(a.openSockets).toBe(1);
      const removedAt = performance.now();
      source.update([b.endpoint]);
      await waitFor(() => a.openSockets === 0, 'the removed pod to see its idle socket close', 2_000);
      expect((a.closedAt.get(1) ?? Number.POSITIVE_INFINITY) - removedAt).toBeLessThan(500);
      for (let i = 0; i < 4; i++) expect((await nodeGet(`http://${HOST}/`, httpAgent)).body).toBe(b.address);
    } finally {
      await httpAgent.close();
    }
  });
});
