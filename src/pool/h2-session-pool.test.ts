/**
 * Regression tests for `H2SessionPool`'s connect-failure accounting: a failed session connect
 * is one attempt — started at the pick, ended once as an error in the load record, reported
 * once through `onConnectFailure` (with whether the stream moved on) — and the caller's pick
 * context is never changed (the pool excludes the failed endpoint in its own copy).
 */
import { describe, expect, test } from 'vitest';
import { freePort } from '../../test/support/tracked-server.js';
import { Balancer } from '../balancing/balancer.js';
import type { PickContext } from '../balancing/picker.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { SeededRandom } from '../core/random.js';
import { H2SessionPool } from './h2-session-pool.js';
import { LifetimePolicy } from './lifetime-policy.js';

describe('H2SessionPool connect failures', () => {
  test('each failed connect is one attempt in the load record, reported once; the caller context is untouched', async () => {
    const endpoints = [
      { address: '127.0.0.1', port: await freePort('127.0.0.1') },
      { address: '127.0.0.2', port: await freePort('127.0.0.2') },
    ];
    const balancer = new Balancer({ policy: 'round-robin', random: new SeededRandom(1) });
    balancer.update(EndpointSet.from(endpoints));
    const reports: [string, boolean][] = [];
    const streamEnds: string[] = [];
    const pool = new H2SessionPool({
      balancer,
      lifetime: new LifetimePolicy({}, new SeededRandom(2), 'test'),
      connectTimeoutMs: 5_000,
      connectRetries: 1,
      onConnectFailure: (key, _ms, retried) => reports.push([key, retried]),
      onStreamEnd: (key) => streamEnds.push(key),
    });
    try {
      const context: PickContext = {};
      const result = await pool.acquire(context);
      expect(result.type).toBe('none');
      expect(result.type === 'none' ? result.error.code : '').toBe('EVENLB_CONNECT_FAILED');
      expect(context).toEqual({});
      expect(reports.map(([, retried]) => retried)).toEqual([true, false]);
      expect(new Set(reports.map(([key]) => key)).size).toBe(2);
      expect(streamEnds).toEqual([]);
      for (const e of endpoints) {
        const load = balancer.loads.get(`${e.address}:${e.port}`);
        expect({ requests: load.requests, errors: load.errors, inFlight: load.inFlight }).toEqual({
          requests: 1,
          errors: 1,
          inFlight: 0,
        });
      }
    } finally {
      await pool.destroy();
    }
  });
});
