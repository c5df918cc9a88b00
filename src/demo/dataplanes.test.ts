/**
 * The demo's start-up wait for a child's listener (the proxy's): a child that dies or never
 * listens must surface as an error carrying its stderr, so the phase fails and says why.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../core/clock.js';
import { freePort, waitForListener } from './dataplanes.js';
import { DemoChild, killAllChildren } from './demo-child.js';

const HOST = '127.0.0.1';

function nodeChild(name: string, script: string): DemoChild {
  return new DemoChild(name, process.execPath, ['-e', script]);
}

afterEach(() => {
  killAllChildren();
});

describe('waitForListener', () => {
  it('resolves once the child listens', async () => {
    const port = await freePort(HOST);
    const child = nodeChild(
      'listener',
      `require('node:net').createServer().listen(${port}, '${HOST}'); setTimeout(() => {}, 30000);`,
    );
    await expect(waitForListener(HOST, port, systemClock, 10_000, child)).resolves.toBeUndefined();
  });

  it('rejects with the stderr tail when the child exits before listening', async () => {
    const port = await freePort(HOST);
    const child = nodeChild(
      'evenlb proxy',
      `process.stderr.write('evenlb proxy: --upstream: cannot read the endpoints file\\n'); process.exit(2);`,
    );
    await expect(waitForListener(HOST, port, systemClock, 10_000, child)).rejects.toThrow(
      /^evenlb proxy exited before listening:\nevenlb proxy: --upstream: cannot read the endpoints file$/,
    );
  });

  it('rejects with the stderr tail when a live child never listens in time', async () => {
    const port = await freePort(HOST);
    const child = nodeChild(
      'evenlb proxy',
      `process.stderr.write('still resolving upstream\\n'); setTimeout(() => {}, 30000);`,
    );
    await expect(waitForListener(HOST, port, systemClock, 2000, child)).rejects.toThrow(
      new RegExp(`nothing listens on ${HOST}:${port} after 2000 ms; evenlb proxy stderr:\\nstill resolving upstream`),
    );
  });
});
