/**
 * One retry policy, owned by the Cluster: the same failure is retried the same way and counted
 * once — one `evenlb_client_retries_total{reason}` per extra attempt, one
 * `evenlb_client_requests_total{outcome}` per attempt, `stats().retries` equal to the metric —
 * while the caller sees one answer per request. Real servers on loopback:
 *
 * - connect refused → retried on another endpoint, any method (`connect-failure`);
 * - a kept-alive socket reset before any answer → retried once on a fresh connection for an
 *   idempotent request, with `retryIdempotent: 0` (`reused-connection`); a POST is not;
 * - a `retryOn` status (503 by default, 500 when configured) → retried elsewhere for an
 *   idempotent request within `retryIdempotent` (`idempotent`).
 */
import { Registry } from 'prom-client';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { BalancedAgent, type ClusterSettings, clientMetricNames, StaticEndpointSource } from '../../src/index.js';
import { type FailureBehaviour, type FailureServer, startFailureServer } from '../support/failure-server.js';

const ROUTE = 'api.shop.svc:80';

const cases: {
  name: string;
  servers: FailureBehaviour[];
  settings: ClusterSettings;
  method: 'GET' | 'POST';
  requests: number;
  /** Caller-visible statuses (or error code) expected for every request. */
  expected: number | string;
  reason: 'connect-failure' | 'reused-connection' | 'idempotent' | undefined;
  /** Outcome label of the failed attempts. */
  failedOutcome: string | undefined;
}[] = [
  {
    name: 'connect refused, GET',
    servers: ['refused', 'ok'],
    settings: { policy: 'round-robin', outlierDetection: false },
    method: 'GET',
    requests: 6,
    expected: 200,
    reason: 'connect-failure',
    failedOutcome: 'connect-failure',
  },
  {
    name: 'connect refused, POST (nothing was sent: any method)',
    servers: ['refused', 'ok'],
    settings: { policy: 'round-robin', outlierDetection: false },
    method: 'POST',
    requests: 6,
    expected: 200,
    reason: 'connect-failure',
    failedOutcome: 'connect-failure',
  },
  {
    name: 'reset on a reused socket, GET, retryIdempotent 0',
    servers: ['reset-reused'],
    settings: { connectionsPerEndpoint: 1, outlierDetection: false },
    method: 'GET',
    requests: 5,
    expected: 200,
    reason: 'reused-connection',
    failedOutcome: 'transport-error',
  },
  {
    name: 'reset on a reused socket, POST: not retried',
    servers: ['reset-reused'],
    settings: { connectionsPerEndpoint: 1, outlierDetection: false },
    method: 'POST',
    requests: 3,
    expected: 'fails',
    reason: undefined,
    failedOutcome: 'transport-error',
  },
  {
    name: '503 (default retryOn), GET, retryIdempotent 1',
    servers: ['503', 'ok'],
    settings: { policy: 'round-robin', retryIdempotent: 1, outlierDetection: false },
    method: 'GET',
    requests: 6,
    expected: 200,
    reason: 'idempotent',
    failedOutcome: 'http-error',
  },
  {
    name: '500 with retryOn [500], GET, retryIdempotent 1',
    servers: ['500', 'ok'],
    settings: { policy: 'round-robin', retryIdempotent: 1, retryOn: [500], outlierDetection: false },
    method: 'GET',
    requests: 6,
    expected: 200,
    reason: 'idempotent',
    failedOutcome: 'http-error',
  },
  {
    name: '503, POST: passed on, not retried',
    servers: ['503', 'ok'],
    settings: { policy: 'round-robin', retryIdempotent: 1, outlierDetection: false },
    method: 'POST',
    requests: 6,
    expected: 'mixed',
    reason: undefined,
    failedOutcome: 'http-error',
  },
];

/** `metric{labels}` → value, from the registry. */
async function values(registry: Registry, name: string): Promise<{ labels: Record<string, unknown>; value: number }[]> {
  const metric = registry.getSingleMetric(name);
  return metric === undefined ? [] : (await metric.get()).values.map((v) => ({ labels: v.labels, value: v.value }));
}

describe('one retry policy, counted once', () => {
  let stop: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const s of stop.splice(0).reverse()) await s();
    stop = [];
  });

  for (const c of cases) {
    test(c.name, async () => {
      const servers: FailureServer[] = [];
      for (const b of c.servers) servers.push(await startFailureServer(b));
      stop.push(async () => {
        for (const s of servers) await s.close();
      });
      const registry = new Registry();
      const agent = new BalancedAgent({
        ...c.settings,
        routes: { [ROUTE]: new StaticEndpointSource(servers.map((s) => s.endpoint)) },
        metrics: { registry },
      });
      stop.push(() => agent.destroy());
      const seen: (number | string)[] = [];
      for (let i = 0; i < c.requests; i++) {
        const body = c.method === 'POST' ? 'payload' : null;
        seen.push(
          await request(`http://${ROUTE}/r${i}`, { method: c.method, body, dispatcher: agent }).then(
            async (r) => {
              await r.body.text();
              return r.statusCode;
            },
            (e: { code?: string }) => e.code ?? 'error',
          ),
        );
      }
      if (typeof c.expected === 'number') expect(seen).toEqual(seen.map(() => c.expected));
      else if (c.expected === 'fails') expect(seen.filter((s) => s === 200).length).toBeLessThan(c.requests);
      else expect(new Set(seen)).toEqual(new Set([200, 503]));

      const retries = await values(registry, clientMetricNames.retries);
      const attempts = await values(registry, clientMetricNames.requests);
      const retried = retries.reduce((n, v) => n + v.value, 0);
      const failed = attempts.filter((v) => v.labels.outcome === c.failedOutcome).reduce((n, v) => n + v.value, 0);
      const succeeded = attempts.filter((v) => v.labels.outcome === 'success').reduce((n, v) => n + v.value, 0);
      const stats = agent.stats().routes[0];
      expect(failed).toBeGreaterThan(0);
      expect(stats?.retries).toBe(retried);
      if (c.reason === undefined) {
        expect(retried).toBe(0);
      } else {
        // Every failed attempt was retried exactly once, with the case's reason, and counted once.
        expect(retries.map((v) => [v.labels.reason, v.value])).toEqual([[c.reason, failed]]);
        expect(succeeded).toBe(c.requests);
      }
    });
  }
});
