import net, { type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../core/clock.js';
import { parseOptions } from '../../core/options.js';
import { AppHealth, appCheckSpec } from './app-health.js';

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe('AppHealth', () => {
  it('is ready after one passing check and not ready after failureThreshold failures in a row', async () => {
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const clock = new ManualClock();
    const changes: boolean[] = [];
    const settings = parseOptions('test', { intervalMs: 1000, failureThreshold: 2 }, appCheckSpec);
    const health = new AppHealth({ host: '127.0.0.1', port, protocol: 'http1' }, settings, clock, (s) =>
      changes.push(s.ready),
    );
    expect(health.notReady()).toBe(`app 127.0.0.1:${port} (tcp check): first check pending`);
    health.start();
    await until(() => health.state.checks === 1);
    expect(health.notReady()).toBeUndefined();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    // One failure: still ready (threshold 2); the next check comes only after the interval.
    clock.advance(999);
    expect(health.state.checks).toBe(1);
    clock.advance(1);
    await until(() => health.state.checks === 2);
    expect(health.notReady()).toBeUndefined();
    expect(health.state.failuresInARow).toBe(1);
    clock.advance(1000);
    await until(() => health.state.checks === 3);
    expect(health.notReady()).toMatch(/^app 127\.0\.0\.1:\d+ \(tcp check\): not answering \(ECONNREFUSED\)$/);
    expect(changes).toEqual([true, false]);
    await health.close();
    clock.advance(5000);
    expect(health.state.checks).toBe(3);
  });

  it('a check that gets no answer fails at its deadline', async () => {
    // Accepts and never answers an HTTP request.
    const sockets = new Set<net.Socket>();
    const server = net.createServer((s) => {
      sockets.add(s);
      s.on('error', () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const clock = new ManualClock();
    const settings = parseOptions('test', { kind: 'http', path: '/healthz', timeoutMs: 300 }, appCheckSpec);
    const health = new AppHealth({ host: '127.0.0.1', port, protocol: 'http1' }, settings, clock);
    health.start();
    await new Promise((r) => setTimeout(r, 50));
    expect(health.state.checks).toBe(0);
    clock.advance(300);
    await until(() => health.state.checks === 1);
    expect(health.notReady()).toContain('not answering (no answer within 300 ms)');
    await health.destroy();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
