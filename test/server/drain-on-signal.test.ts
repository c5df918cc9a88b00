/**
 * SIGTERM under load, as Kubernetes sends it during a rolling update: the server runs in a real
 * child process with `drainOnSignal`; two kinds of keep-alive clients (undici Pool and Node's
 * http.Agent, 4 connections each) keep it busy. Every request must either complete or fail to
 * connect (never sent); the process must exit, drained, within the grace.
 */
import http from 'node:http';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleFixture, FixtureProcess } from './support/fixture-process.js';
import { httpGetText } from './support/servers.js';

const GRACE_MS = 5000;
const LOOPS_PER_CLIENT = 4;
const LOAD_BEFORE_SIGNAL_MS = 500;
const MAX_LOOP_MS = 10_000;
const MAX_REQUESTS_PER_LOOP = 20_000;

let bundle: string;
beforeAll(async () => {
  bundle = await bundleFixture(join(import.meta.dirname, 'fixtures', 'drain-server.ts'));
});

const processes: FixtureProcess[] = [];
afterAll(async () => {
  for (const p of processes) await p.stop();
});

/** A request that failed before any byte was sent: the connection could not be opened. */
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT']);

interface Outcomes {
  completed: number;
  neverSent: number;
  failed: string[];
}

/** Sends requests until the first connect error (the server is gone) or the bounds. */
async function loop(send: () => Promise<string>, outcomes: Outcomes): Promise<void> {
  const until = Date.now() + MAX_LOOP_MS;
  for (let i = 0; i < MAX_REQUESTS_PER_LOOP && Date.now() < until; i++) {
    try {
      const body = await send();
      if (body === 'ok') outcomes.completed++;
      else outcomes.failed.push(`body ${JSON.stringify(body)}`);
    } catch (err) {
      const code = String((err as { code?: string }).code ?? err);
      if (CONNECT_ERRORS.has(code)) {
        outcomes.neverSent++;
        return;
      }
      outcomes.failed.push(code);
    }
  }
}

describe('drainOnSignal: SIGTERM under load (server in a child process)', () => {
  it('every request completes or was never sent, nothing is cut, the process exits drained within the grace', async () => {
    const proc = FixtureProcess.start(bundle, [JSON.stringify({ graceMs: GRACE_MS, minDelayMs: 5, maxDelayMs: 60 })]);
    processes.push(proc);
    const { port } = (await proc.waitFor('listening')) as { port: number; type: string };
    const origin = `http://127.0.0.1:${port}`;

    const pool = new Pool(origin, { connections: LOOPS_PER_CLIENT });
    const agent = new http.Agent({ keepAlive: true, maxSockets: LOOPS_PER_CLIENT });
    const viaUndici = async () => (await pool.request({ path: '/', method: 'GET' })).body.text();
    const viaAgent = () => httpGetText(port, agent);

    const outcomes: Outcomes = { completed: 0, neverSent: 0, failed: [] };
    const loops = [
      ...Array.from({ length: LOOPS_PER_CLIENT }, () => loop(viaUndici, outcomes)),
      ...Array.from({ length: LOOPS_PER_CLIENT }, () => loop(viaAgent, outcomes)),
    ];
    await new Promise((r) => setTimeout(r, LOAD_BEFORE_SIGNAL_MS));
    const completedBeforeSignal = outcomes.completed;
    const signalledAt = Date.now();
    proc.child.kill('SIGTERM');

    const exit = await proc.exited;
    const exitedAfterMs = Date.now() - signalledAt;
    await Promise.all(loops);
    await pool.close();
    agent.destroy();

    const signal = (await proc.waitFor('signal')) as { inFlight: number; type: string };
    const drained = (await proc.waitFor('drained')) as {
      type: string;
      inFlightAtStart: number;
      destroyed: number;
      timedOut: boolean;
      elapsedMs: number;
    };

    expect(outcomes.failed, 'requests that were sent and failed').toEqual([]);
    expect(completedBeforeSignal).toBeGreaterThan(20);
    expect(outcomes.completed).toBeGreaterThan(completedBeforeSignal);
    expect(outcomes.neverSent).toBe(2 * LOOPS_PER_CLIENT);
    // Requests were in flight at the signal, and all of them finished: nothing was destroyed.
    expect(signal.inFlight).toBeGreaterThan(0);
    expect(drained.inFlightAtStart).toBeGreaterThan(0);
    expect(drained).toMatchObject({ destroyed: 0, timedOut: false });
    expect(drained.elapsedMs).toBeLessThan(GRACE_MS);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(exitedAfterMs).toBeLessThan(GRACE_MS);
  });
});
