/**
 * Helpers for the Kubernetes discovery tests: fast watch timing, waiting for a source's
 * snapshot to satisfy a condition (event-driven, with a deadline), reading a set's addresses in
 * a stable order, the `web-a` slice of Service `cfg/web`, and a service-account token rotated
 * as the kubelet rotates it.
 */
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EndpointSet } from '../../src/core/endpoint-set.js';
import type { DiscoverySnapshot, EndpointSource } from '../../src/discovery/endpoint-source.js';
import type { KubernetesSourceOptions } from '../../src/discovery/kubernetes/index.js';
import { endpointSlice, type FakeKubeApiServer } from '../support/fake-kube-api-server.js';

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

/** The `web-a` slice of Service `cfg/web` (port 8080) listing `addresses`. */
export function webSlice(...addresses: string[]) {
  return endpointSlice({
    name: 'web-a',
    namespace: 'cfg',
    service: 'web',
    ports: [{ port: 8080 }],
    endpoints: addresses.map((address) => ({ address })),
  });
}

/**
 * Replaces the token in service-account folder `dir` as the kubelet does — the new file
 * replaces the old in one rename, so a reader never sees it empty (writeFile truncates first: a
 * read then sent no token) — and makes `api` accept only the new one.
 */
export async function rotateToken(dir: string, api: FakeKubeApiServer, token: string): Promise<void> {
  await writeFile(join(dir, 'token.new'), token);
  await rename(join(dir, 'token.new'), join(dir, 'token'));
  api.setToken(token);
}
