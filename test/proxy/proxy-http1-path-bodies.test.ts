/**
 * The proxy's own HTTP/1.1 data path, end to end over real sockets: message bodies and framing.
 * Pipelined requests, 32 MiB request and response bodies streamed with backpressure both ways
 * (byte count and SHA-256 on both sides), chunked trailers, close-delimited and HEAD responses.
 * Clients are raw `net` sockets parsed by hand (proxy-http1-raw-client.ts); backends and proxy
 * come from proxy-http1-path-fixture.ts.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { echo, port, useHttp1PathProxy } from './proxy-http1-path-fixture.js';
import {
  BIG_BYTES,
  bigPiece,
  CHUNK_BYTES,
  collectGarbage,
  get,
  MiB,
  RawConn,
  writeAll,
} from './proxy-http1-raw-client.js';

useHttp1PathProxy();

describe('proxy HTTP/1.1 data path: bodies and framing', () => {
  it('answers 5 pipelined GETs (one write) in order and keeps the connection open', async () => {
    const c = await RawConn.open(port);
    try {
      c.write([1, 2, 3, 4, 5].map((i) => get('echo.test', `/pipe/${i}`)).join(''));
      for (let i = 1; i <= 5; i++) {
        const r = await c.read();
        expect(r.status).toBe(200);
        expect(r.body.toString()).toBe(`GET /pipe/${i} 0`);
      }
      expect(c.closed).toBe(false);
      c.write(get('echo.test', '/pipe/6'));
      const r6 = await c.read();
      expect(r6.body.toString()).toBe('GET /pipe/6 0');
    } finally {
      c.destroy();
    }
  });

  it('streams a 32 MiB Content-Length upload with backpressure, and a many-chunk chunked upload, intact', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(
        `POST /upload HTTP/1.1\r\nHost: echo.test\r\nX-Slow-Read: 1\r\nContent-Type: application/octet-stream\r\nContent-Length: ${BIG_BYTES}\r\n\r\n`,
      );
      const hash = createHash('sha256');
      let sent = 0;
      // The proxy, client and backend share this process, so RSS also carries the garbage of
      // the test's own buffers; the bound is loose on purpose. A proxy that buffered the body
      // instead of pausing the client would add ~32 MiB. The tighter signal is the gap between
      // what the client has written and what the backend has read: kernel socket buffers
      // (two hops) plus whatever the proxy holds.
      const gc = collectGarbage();
      gc();
      const rssBefore = process.memoryUsage().rss;
      let rssMax = rssBefore;
      let maxGap = 0;
      const sampler = setInterval(() => {
        rssMax = Math.max(rssMax, process.memoryUsage().rss);
        maxGap = Math.max(maxGap, sent - echo.uploadBytes);
      }, 10);
      try {
        for (let i = 0; i < BIG_BYTES / CHUNK_BYTES; i++) {
          const piece = bigPiece(i);
          hash.update(piece);
          sent += piece.length;
          await writeAll(c.socket, piece);
          if (sent % (2 * MiB) === 0) gc();
        }
        const r = await c.read({ timeoutMs: 20_000 });
        expect(r.status).toBe(200);
        expect(JSON.parse(r.body.toString())).toEqual({ bytes: BIG_BYTES, sha256: hash.digest('hex') });
      } finally {
        clearInterval(sampler);
      }
      expect(maxGap).toBeLessThan(24 * MiB);
      expect(rssMax - rssBefore).toBeLessThan(24 * MiB);

      // Chunked: 1500 chunks of seeded sizes (1 B – 8 KiB), written in groups of uneven size.
      const random = new SeededRandom(161);
      const chash = createHash('sha256');
      let total = 0;
      c.write('POST /upload HTTP/1.1\r\nHost: echo.test\r\nTransfer-Encoding: chunked\r\n\r\n');
      let group: Buffer[] = [];
      for (let i = 0; i < 1500; i++) {
        const size = 1 + Math.floor(random.next() * 8192);
        const data = bigPiece(i, size);
        chash.update(data);
        total += size;
        group.push(Buffer.from(`${size.toString(16)}\r\n`, 'latin1'), data, Buffer.from('\r\n', 'latin1'));
        if (group.length >= 3 * (1 + Math.floor(random.next() * 6))) {
          await writeAll(c.socket, Buffer.concat(group));
          group = [];
        }
      }
      group.push(Buffer.from('0\r\n\r\n', 'latin1'));
      await writeAll(c.socket, Buffer.concat(group));
      const r2 = await c.read({ timeoutMs: 20_000 });
      expect(r2.status).toBe(200);
      expect(JSON.parse(r2.body.toString())).toEqual({ bytes: total, sha256: chash.digest('hex') });
    } finally {
      c.destroy();
    }
  });

  it('delivers 32 MiB responses (Content-Length and chunked) intact to a slow reader', async () => {
    const c = await RawConn.open(port);
    try {
      for (const path of ['/big-cl', '/big-chunked']) {
        echo.bigSha.delete(path);
        c.write(get('echo.test', path));
        const r = await c.read({ keepBody: false, slowBytes: 4 * MiB, slowDelayMs: 3, timeoutMs: 25_000 });
        expect(r.status).toBe(200);
        if (path === '/big-cl') expect(r.headers['content-length']).toBe(String(BIG_BYTES));
        else expect(r.headers['transfer-encoding']).toBe('chunked');
        expect(r.bodyBytes).toBe(BIG_BYTES);
        expect(r.sha256).toBe(echo.bigSha.get(path));
      }
      expect(c.closed).toBe(false);
    } finally {
      c.destroy();
    }
  });

  it('passes a chunked response with trailers through', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('echo.test', '/trailers'));
      const r = await c.read();
      expect(r.status).toBe(200);
      expect(r.headers['transfer-encoding']).toBe('chunked');
      expect(r.body.toString()).toBe('part-one;part-two');
      expect(r.trailers['x-checksum']).toBe('c0ffee');
    } finally {
      c.destroy();
    }
  });

  it('forwards a close-delimited upstream response with connection: close, then closes', async () => {
    const c = await RawConn.open(port);
    try {
      c.write(get('closer.test', '/x'));
      const r = await c.read();
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('close-delimited body, all of it');
      expect(r.headers.connection).toBe('close');
      expect(await c.waitClosed(3000)).toBe(true);
    } finally {
      c.destroy();
    }
  });

  it('answers HEAD (content-length: 1000, no body) and then a GET on the same connection', async () => {
    const c = await RawConn.open(port);
    try {
      c.write('HEAD /head HTTP/1.1\r\nHost: echo.test\r\n\r\n');
      const h = await c.read({ head: true, timeoutMs: 3000 });
      expect(h.status).toBe(200);
      expect(h.headers['content-length']).toBe('1000');
      // Nothing of a body may follow a HEAD response: the next bytes on the connection are
      // the next response's head.
      expect(c.buffered).toBe(0);
      c.write(get('echo.test', '/after-head'));
      const g = await c.read();
      expect(g.status).toBe(200);
      expect(g.body.toString()).toBe('GET /after-head 0');
    } finally {
      c.destroy();
    }
  });
});
