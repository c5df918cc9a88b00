/**
 * The proxy's own HTTP/1.1 data path, end to end over real sockets: the upstream side. Upstream
 * keep-alive reuse, the retry of a bodiless idempotent request whose reused upstream socket died
 * (and no retry for a POST), malformed upstream heads, client aborts reaching the backend, the
 * upstream body idle timeout, and balance under 50 concurrent keep-alive connections. Clients
 * are raw `net` sockets parsed by hand (proxy-http1-raw-client.ts); backends and proxy come from
 * proxy-http1-path-fixture.ts.
 */
import { describe, expect, it } from 'vitest';
import { shares, waitFor } from './helpers.js';
import { echo, port, stale, trio, useHttp1PathProxy } from './proxy-http1-path-fixture.js';
import { get, RawConn } from './proxy-http1-raw-client.js';

useHttp1PathProxy();

describe('proxy HTTP/1.1 data path: upstream', () => {
  it('reuses upstream keep-alive sockets: 200 sequential requests use at most 2 backend sockets', async () => {
    echo.kaSockets.clear();
    const c = await RawConn.open(port);
    try {
      const deadline = Date.now() + 15_000;
      for (let i = 0; i < 200 && Date.now() < deadline; i++) {
        c.write(get('echo.test', `/ka/${i}`));
        const r = await c.read();
        expect(r.status).toBe(200);
        expect(r.body.toString()).toBe(`GET /ka/${i} 0`);
      }
      expect(echo.kaSockets.size).toBeGreaterThanOrEqual(1);
      expect(echo.kaSockets.size).toBeLessThanOrEqual(2);
    } finally {
      c.destroy();
    }
  });

  it('retries bodiless GETs whose reused upstream socket died, but not a POST with a body', async () => {
    stale.requests.length = 0;
    const c = await RawConn.open(port);
    try {
      for (let i = 0; i < 4; i++) {
        c.write(get('stale.test', `/g${i}`));
        const r = await c.read();
        expect(r.status, `GET /g${i}`).toBe(200);
        expect(r.body.toString()).toBe('ok');
      }
      // Every GET after the first hit a reused socket first, then a fresh one.
      expect(stale.requests.filter((l) => l.startsWith('GET')).length).toBe(7);
      c.write('POST /p HTTP/1.1\r\nHost: stale.test\r\nContent-Length: 5\r\n\r\nhello');
      const p = await c.read();
      expect(p.status).toBe(502);
      expect(p.headers['x-evenlb-reason']).toBeDefined();
      // The 502 came after the proxy gave up: a retry would have been sent before it.
      await waitFor(() => stale.requests.some((l) => l.startsWith('POST')), 3000, 'the POST at the backend');
      expect(stale.requests.filter((l) => l.startsWith('POST')).length).toBe(1);
    } finally {
      c.destroy();
    }
  });

  it('answers 502 upstream-error for a malformed upstream response head', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('badhead.test', '/'));
      const r = await c.read();
      expect(r.status).toBe(502);
      expect(r.headers['x-evenlb-reason']).toBe('upstream-error');
    } finally {
      c.destroy();
    }
  });

  it('closes the backend response when the client goes away mid-response', async () => {
    const c = await RawConn.open(port);
    c.write(get('echo.test', '/slow'));
    // Wait for the head and at least one tick, then vanish.
    await waitFor(() => c.buffered > 0, 5000, 'the first bytes of the slow response');
    const first = c.buffered;
    await waitFor(() => c.buffered > first, 5000, 'another tick of the slow response');
    expect(echo.slowClosedAt).toBe(0);
    const goneAt = Date.now();
    c.destroy();
    await waitFor(() => echo.slowClosedAt > 0, 3000, 'the backend response to close');
    expect(echo.slowClosedAt - goneAt).toBeLessThan(1000);
  });

  it('cuts the client and the backend when the upstream body stalls past bodyTimeoutMs', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('stall.test', '/stall'));
      await waitFor(() => c.buffered >= 1000, 5000, 'the head and first body bytes');
      const stalledAt = Date.now();
      expect(await c.waitClosed(2500)).toBe(true);
      expect(Date.now() - stalledAt).toBeLessThan(1500);
      await waitFor(() => echo.stallClosedAt > 0, 2000, 'the backend socket to close');
    } finally {
      c.destroy();
    }
  });

  it('balances 50 concurrent keep-alive connections × 20 requests over 3 backends (33% ± 8%)', async () => {
    for (const b of trio) b.hits = 0;
    const deadline = Date.now() + 20_000;
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 50 }, async (_, k) => {
        const c = await RawConn.open(port);
        try {
          for (let i = 0; i < 20 && Date.now() < deadline; i++) {
            c.write(get('trio.test', `/c${k}/r${i}`));
            statuses.push((await c.read()).status);
          }
        } finally {
          c.destroy();
        }
      }),
    );
    expect(statuses.length).toBe(1000);
    expect(statuses.every((s) => s === 200)).toBe(true);
    for (const share of shares(trio)) {
      expect(share).toBeGreaterThan(1 / 3 - 0.08);
      expect(share).toBeLessThan(1 / 3 + 0.08);
    }
  });
});
