/**
 * `ListenerBinding` on real loopback sockets: it reports why it is not serving until a receiver
 * takes it; connections accepted before that wait and are handed over; swapping the receiver
 * while clients keep connecting refuses none and gives each to exactly one receiver; a held
 * address rejects the bind; `close()` stops accepting and is idempotent.
 */
import net, { type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { ListenerBinding } from './listener-binding.js';

const open: ListenerBinding[] = [];
afterEach(async () => {
  for (const b of open.splice(0)) await b.close();
});

async function bind(address = '127.0.0.1:0'): Promise<ListenerBinding> {
  const b = await ListenerBinding.bind(address, systemClock);
  open.push(b);
  return b;
}

/** Connects and resolves with the one byte the receiver wrote, or the error code. */
function exchange(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    s.setEncoding('latin1');
    s.on('data', (c: string) => (text += c));
    s.once('close', () => resolve(text === '' ? 'closed' : text));
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

const answering =
  (mark: string, seen: Socket[] = []) =>
  (socket: Socket): void => {
    seen.push(socket);
    socket.end(mark);
  };

describe('ListenerBinding', () => {
  it('is not ready until served; connections accepted before wait and are handed over', async () => {
    const b = await bind();
    expect(b.problem()).toBe('no listener serves it yet');
    const early = exchange(b.port);
    await new Promise((r) => setTimeout(r, 100));
    b.serve(answering('a'), 0);
    expect(b.problem()).toBeUndefined();
    expect(await early).toBe('a');
  });

  it('swaps receivers while clients connect: none refused, each served by exactly one', async () => {
    const b = await bind();
    const first: Socket[] = [];
    const second: Socket[] = [];
    b.serve(answering('1', first), 0);
    const answers: Promise<string>[] = [];
    for (let i = 0; i < 200; i++) {
      answers.push(exchange(b.port));
      if (i === 100) b.serve(answering('2', second), 0);
      if (i % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    const got = await Promise.all(answers);
    expect(got.filter((a) => a !== '1' && a !== '2')).toEqual([]);
    expect(first.length + second.length).toBe(200);
    expect(second.length).toBeGreaterThan(0);
  });

  it('rejects an address already held, and stops accepting on close (idempotent)', async () => {
    const b = await bind();
    b.serve(answering('x'), 0);
    await expect(ListenerBinding.bind(`127.0.0.1:${b.port}`, systemClock)).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
    const port = b.port;
    await Promise.all([b.close(), b.close()]);
    expect(b.bound).toBe(false);
    expect(b.problem()).toBe('not listening');
    expect(await exchange(port)).toBe('ECONNREFUSED');
  });

  it('bounds the connections it accepted that are still open (limits.maxConnections)', async () => {
    const b = await bind();
    const held: Socket[] = [];
    b.serve((socket) => held.push(socket), 2);
    const clients = [0, 1].map(() => net.connect(b.port, '127.0.0.1'));
    await new Promise((r) => setTimeout(r, 200));
    expect(held.length).toBe(2);
    // A third is dropped at once; once one closes, the next is served.
    expect(await exchange(b.port)).toMatch(/^(closed|ECONNRESET)$/);
    held[0]?.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const fourth = exchange(b.port);
    await new Promise((r) => setTimeout(r, 100));
    expect(held.length).toBe(3);
    held[2]?.end('3');
    expect(await fourth).toBe('3');
    for (const c of clients) c.destroy();
    for (const s of held) s.destroy();
  });

  it('closes connections still waiting when it closes unserved', async () => {
    const b = await bind();
    const waiting = exchange(b.port);
    await new Promise((r) => setTimeout(r, 100));
    await b.close();
    expect(['closed', 'ECONNRESET']).toContain(await waiting);
  });
});
