/**
 * `ListenerBinding` on real loopback sockets: it reports why it is not serving until a receiver
 * takes it; connections accepted before that wait and are handed over; swapping the receiver
 * while clients keep connecting refuses none and gives each to exactly one receiver; a held
 * address rejects the bind; `close()` stops accepting and is idempotent. Admission at
 * `maxConnections`: a new connection is refused only when every admitted one is busy, else the
 * oldest idle one makes room (counted); a receiver that takes the socket over takes its
 * admitted connections with it — they count until they close, and make room when idle.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net, { type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../core/clock.js';
import { ListenerBinding } from './listener-binding.js';

const open: ListenerBinding[] = [];
const UNLIMITED = { maxConnections: 0 };
afterEach(async () => {
  for (const b of open.splice(0)) await b.close();
});

async function bind(address = '127.0.0.1:0'): Promise<ListenerBinding> {
  const b = await ListenerBinding.bind(address, systemClock);
  open.push(b);
  return b;
}

/** Resolves once `done()` holds (polled every 10 ms, at most 5 s). */
async function waitUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(done()).toBe(true);
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
    b.serve(answering('a'), UNLIMITED);
    expect(b.problem()).toBeUndefined();
    expect(await early).toBe('a');
  });

  it('swaps receivers while clients connect: none refused, each served by exactly one', async () => {
    const b = await bind();
    const first: Socket[] = [];
    const second: Socket[] = [];
    b.serve(answering('1', first), UNLIMITED);
    const answers: Promise<string>[] = [];
    for (let i = 0; i < 200; i++) {
      answers.push(exchange(b.port));
      if (i === 100) b.serve(answering('2', second), UNLIMITED);
      if (i % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    const got = await Promise.all(answers);
    expect(got.filter((a) => a !== '1' && a !== '2')).toEqual([]);
    expect(first.length + second.length).toBe(200);
    expect(second.length).toBeGreaterThan(0);
  });

  it('rejects an address already held, and stops accepting on close (idempotent)', async () => {
    const b = await bind();
    b.serve(answering('x'), UNLIMITED);
    await expect(ListenerBinding.bind(`127.0.0.1:${b.port}`, systemClock)).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
    const port = b.port;
    await Promise.all([b.close(), b.close()]);
    expect(b.bound).toBe(false);
    expect(b.problem()).toBe('not listening');
    expect(await exchange(port)).toBe('ECONNREFUSED');
  });

  it('at maxConnections with every connection busy, refuses a new one; once one closes, serves the next', async () => {
    const b = await bind();
    const held: Socket[] = [];
    b.serve(
      (socket) => {
        held.push(socket);
        b.idleWhen(socket, () => false);
      },
      { maxConnections: 2 },
    );
    const clients = [0, 1].map(() => net.connect(b.port, '127.0.0.1'));
    await waitUntil(() => held.length === 2);
    // A third is dropped at once: the busy ones are untouched.
    expect(await exchange(b.port)).toMatch(/^(closed|ECONNRESET)$/);
    expect(held.every((s) => !s.destroyed)).toBe(true);
    held[0]?.destroy();
    await waitUntil(() => b.connections === 1);
    const fourth = exchange(b.port);
    await waitUntil(() => held.length === 3);
    held[2]?.end('3');
    expect(await fourth).toBe('3');
    for (const c of clients) c.destroy();
    for (const s of held) s.destroy();
  });

  it('at maxConnections closes the oldest idle connection to make room, and counts it', async () => {
    const b = await bind();
    const held: Socket[] = [];
    let evicted = 0;
    const busy = new Set<Socket>();
    b.serve(
      (socket) => {
        held.push(socket);
        b.idleWhen(socket, () => !busy.has(socket));
      },
      { maxConnections: 3, onEvict: () => evicted++ },
    );
    const clients: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      clients.push(net.connect(b.port, '127.0.0.1').on('error', () => {}));
      await waitUntil(() => held.length === i + 1);
    }
    // The oldest is busy: the oldest idle one (the second) makes room.
    busy.add(held[0] as Socket);
    const fourth = exchange(b.port);
    await waitUntil(() => held.length === 4);
    expect(evicted).toBe(1);
    expect(held.map((s) => s.destroyed)).toEqual([false, true, false, false]);
    held[3]?.end('4');
    expect(await fourth).toBe('4');
    for (const c of clients) c.destroy();
    for (const s of held) s.destroy();
  });

  it('a new receiver takes over admission: the connections of the one it replaced count until they close', async () => {
    const b = await bind();
    const old: Socket[] = [];
    const busy = new Set<Socket>();
    b.serve(
      (socket) => {
        old.push(socket);
        busy.add(socket);
        b.idleWhen(socket, () => busy.has(socket) === false);
      },
      { maxConnections: 2 },
    );
    const clients = [0, 1].map(() => net.connect(b.port, '127.0.0.1').on('error', () => {}));
    await waitUntil(() => old.length === 2);
    // Taken over (a reload): the old receiver's two busy connections still fill the limit.
    const fresh: Socket[] = [];
    let evicted = 0;
    b.serve((socket) => fresh.push(socket), { maxConnections: 2, onEvict: () => evicted++ });
    expect(b.connections).toBe(2);
    expect(await exchange(b.port)).toMatch(/^(closed|ECONNRESET)$/);
    expect(fresh).toHaveLength(0);
    // One of the old connections goes idle (its response done): it makes room, the oldest first.
    busy.delete(old[0] as Socket);
    const next = exchange(b.port);
    await waitUntil(() => fresh.length === 1);
    expect(evicted).toBe(1);
    expect(old.map((s) => s.destroyed)).toEqual([true, false]);
    fresh[0]?.end('new');
    expect(await next).toBe('new');
    // The other closes by itself: no longer counted.
    old[1]?.destroy();
    await waitUntil(() => b.connections === 0);
    for (const c of clients) c.destroy();
  });

  it('closes connections still waiting when it closes unserved', async () => {
    const b = await bind();
    const waiting = exchange(b.port);
    await new Promise((r) => setTimeout(r, 100));
    await b.close();
    expect(['closed', 'ECONNRESET']).toContain(await waiting);
  });
});

describe('accept queue', () => {
  /** The listening socket's accept queue as the kernel reports it (`ss`: Send-Q), or undefined without `ss`. */
  function backlogOf(port: number): number | undefined {
    try {
      const line = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' }).trim();
      return Number(line.split(/\s+/)[2]);
    } catch {
      return undefined;
    }
  }

  it("asks the kernel for a queue of 4096 (capped by net.core.somaxconn), not Node's 511", async (ctx) => {
    const b = await bind();
    const backlog = backlogOf(b.port);
    if (backlog === undefined) return ctx.skip('ss (iproute2) is not installed');
    const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
    expect(backlog).toBe(Math.min(4096, somaxconn));
  });
});
