/**
 * Local replies follow HTTP semantics: a reply the proxy makes itself to a `HEAD` request has
 * no body, whatever made it (no route, a refused endpoint, an upstream that timed out or reset,
 * a refused expectation, a bad request), so a pipelined request after it reads its own
 * response — checked with a raw socket and a strict response parser. A reply that cannot
 * leave the connection reusable says `Connection: close` and closes it; then nothing follows.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, startBackend, startProxy } from './helpers.js';
import { h2Exchange, rawExchange } from './smuggling/clients.js';
import { header, parseResponses } from './smuggling/strict-http.js';

let ok: Backend;
let silent: Backend;
let resetting: Backend;
let proxy: ProxyServer;
let port = 0;
let refusedKey = '';

beforeAll(async () => {
  ok = await startBackend('ok', '127.0.0.61');
  silent = await startBackend('silent', '127.0.0.62', { handler: () => {} });
  resetting = await startBackend('reset', '127.0.0.63', { handler: (req) => req.socket.destroy() });
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.64', r));
  refusedKey = `127.0.0.64:${(probe.address() as net.AddressInfo).port}`;
  await new Promise<void>((r) => probe.close(() => r()));
  proxy = await startProxy({
    listeners: [{ name: 'web', address: '127.0.0.1:0' }],
    clusters: [
      { name: 'ok', target: `static:///${ok.key}` },
      { name: 'refused', target: `static:///${refusedKey}` },
      { name: 'slow', target: `static:///${silent.key}`, requestTimeoutMs: 300, retries: { idempotent: 0 } },
      { name: 'reset', target: `static:///${resetting.key}`, retries: { idempotent: 0 } },
    ],
    routes: [
      { hosts: ['ok.test'], cluster: 'ok' },
      { hosts: ['refused.test'], cluster: 'refused' },
      { hosts: ['slow.test'], cluster: 'slow' },
      { hosts: ['reset.test'], cluster: 'reset' },
    ],
  });
  port = proxy.listenerPort('web') as number;
});

afterAll(async () => {
  await proxy?.close();
  silent.server.closeAllConnections();
  await Promise.all([ok, silent, resetting].map((b) => b.close()));
});

const GET_OK = 'GET /next HTTP/1.1\r\nHost: ok.test\r\n\r\n';

/** Local replies on a connection that stays open: `HEAD` then a pipelined `GET` that must read its own 200. */
const keptOpen: { name: string; head: string; status: number; reason: string }[] = [
  { name: 'no route (404)', head: 'HEAD / HTTP/1.1\r\nHost: nowhere.test\r\n\r\n', status: 404, reason: 'no-route' },
  {
    name: 'refused endpoint (503)',
    head: 'HEAD / HTTP/1.1\r\nHost: refused.test\r\n\r\n',
    status: 503,
    reason: 'connect-failed',
  },
  {
    name: 'upstream timeout (504)',
    head: 'HEAD / HTTP/1.1\r\nHost: slow.test\r\n\r\n',
    status: 504,
    reason: 'upstream-timeout',
  },
  {
    name: 'upstream reset (502)',
    head: 'HEAD / HTTP/1.1\r\nHost: reset.test\r\n\r\n',
    status: 502,
    reason: 'upstream-reset',
  },
  {
    name: 'refused expectation (417)',
    head: 'HEAD / HTTP/1.1\r\nHost: ok.test\r\nExpect: something-else\r\n\r\n',
    status: 417,
    reason: 'expectation-failed',
  },
];

describe('local replies to HEAD', () => {
  for (const c of keptOpen) {
    it(`${c.name}: no body, and a pipelined GET parses cleanly after it`, async () => {
      const ex = await rawExchange(port, c.head + GET_OK, ['HEAD', 'GET'], 2, false, 5000);
      const parsed = parseResponses(ex.received, ['HEAD', 'GET'], ex.ended);
      expect(parsed.error).toBeUndefined();
      expect(parsed.messages.map((m) => Number(m.first))).toEqual([c.status, 200]);
      const first = parsed.messages[0];
      expect(first === undefined ? undefined : header(first, 'x-evenlb-reason')).toBe(c.reason);
      expect(parsed.messages[1]?.body.toString()).toBe('ok 0\n');
      expect(parsed.rest).toBe(0);
    });
  }

  const closing: { name: string; head: string; status: number }[] = [
    { name: 'bad host (400)', head: 'HEAD / HTTP/1.1\r\nHost: bad host!\r\n\r\n', status: 400 },
    { name: 'bad request target (400)', head: 'HEAD nope HTTP/1.1\r\nHost: ok.test\r\n\r\n', status: 400 },
    { name: 'malformed head (400)', head: 'HEAD / HTTP/1.1\r\nHost : ok.test\r\n\r\n', status: 400 },
  ];
  for (const c of closing) {
    it(`${c.name}: Connection: close, no body, then the connection closes`, async () => {
      const ex = await rawExchange(port, c.head + GET_OK, ['HEAD', 'GET'], 2, false, 5000);
      expect(ex.ended).toBe(true);
      const parsed = parseResponses(ex.received, ['HEAD', 'GET'], true);
      expect(parsed.error).toBeUndefined();
      expect(parsed.messages.map((m) => Number(m.first))).toEqual([c.status]);
      expect(parsed.messages[0] === undefined ? '' : header(parsed.messages[0], 'connection')).toBe('close');
      // Nothing after the head: no body bytes a client would read as the next response.
      expect(parsed.rest).toBe(0);
    });
  }

  it('HTTP/1.0 keep-alive: a local reply to HEAD has no body either', async () => {
    const text =
      'HEAD / HTTP/1.0\r\nHost: nowhere.test\r\nConnection: keep-alive\r\n\r\n' +
      'GET /next HTTP/1.0\r\nHost: ok.test\r\nConnection: keep-alive\r\n\r\n';
    const ex = await rawExchange(port, text, ['HEAD', 'GET'], 2, false, 5000);
    const parsed = parseResponses(ex.received, ['HEAD', 'GET'], ex.ended);
    expect(parsed.error).toBeUndefined();
    expect(parsed.messages.map((m) => Number(m.first))).toEqual([404, 200]);
  });

  it('HTTP/2: a local reply to HEAD carries no DATA', async () => {
    const [res] = await h2Exchange(port, [
      { headers: { ':method': 'HEAD', ':path': '/', ':authority': 'nowhere.test' } },
    ]);
    expect(res?.status).toBe(404);
    expect(res?.error).toBeUndefined();
    expect(res?.body).toBe('');
  });
});
