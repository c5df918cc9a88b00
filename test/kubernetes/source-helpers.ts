/**
 * Helpers for the Kubernetes discovery tests: fast watch timing, waiting for a source's
 * snapshot to satisfy a condition (event-driven, with a deadline), and reading a set's
 * addresses in a stable order.
 */
import type { EndpointSet } from '../../src/core/endpoint-set.js';
import type { DiscoverySnapshot, EndpointSource } from '../../src/discovery/endpoint-source.js';
import type { KubernetesSourceOptions } from '../../src/discovery/kubernetes/index.js';
import type { FakeKubeApiServer } from '../support/fake-kube-api-server.js';

/** Timing that keeps retries short; the stall timeout is long unless a test lowers it. */
export function fastOptions(api: FakeKubeApiServer, extra: KubernetesSourceOptions = {}): KubernetesSourceOptions {
  return {
    connection: api.connection(),
    backoffBaseMs: 20,
    backoffMaxMs: 200,
    requestTimeoutMs: 2000,
    watchIdleTimeoutMs: 30_000,
    onWarning: () => {},
    ...extra,
  };
}

/** Resolves with the first snapshot (current or later) satisfying `check`; rejects after `timeoutMs`. */
export function waitForSnapshot(
  source: EndpointSource,
  check: (snapshot: DiscoverySnapshot) => boolean,
  timeoutMs = 5000,
  what = 'a matching snapshot',
): Promise<DiscoverySnapshot> {
  return new Promise((resolve, reject) => {
    const current = source.snapshot();
    if (check(current)) {
      resolve(current);
      return;
    }
    const timer = setTimeout(() => {
      unsubscribe();
      const s = source.snapshot();
      reject(
        new Error(
          `timed out after ${timeoutMs} ms waiting for ${what}; last: ${s.status.state} [${addresses(s.endpoints).join(' ')}]` +
            ('error' in s.status ? ` (${s.status.error.message})` : ''),
        ),
      );
    }, timeoutMs);
    const unsubscribe = source.subscribe((snapshot) => {
      if (!check(snapshot)) return;
      clearTimeout(timer);
      unsubscribe();
      resolve(snapshot);
    });
  });
}

/** Endpoint keys of a set, sorted. */
export function addresses(set: EndpointSet): string[] {
  return set.endpoints.map((e) => e.key).sort();
}

/** Eligible endpoint keys (ready, else serving-and-terminating), sorted. */
export function eligible(set: EndpointSet): string[] {
  return set
    .eligible()
    .map((e) => e.key)
    .sort();
}

/** True when the snapshot is `ok` with exactly these endpoint keys. */
export function okWith(...keys: string[]): (s: DiscoverySnapshot) => boolean {
  const want = [...keys].sort().join(' ');
  return (s) => s.status.state === 'ok' && addresses(s.endpoints).join(' ') === want;
}
