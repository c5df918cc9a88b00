/**
 * Services constructed on purpose, one per cause `evenlb doctor` names, plus a balanced one.
 * Each is a `FakeClusterSpec` (pods with ages, zones, rates and connections; webhook callers;
 * kube-proxy's mode) and the cause the doctor must name for it.
 */
import type { Cause } from '../../src/doctor/diagnose.js';
import type { FakeClusterSpec, FakePodSpec } from './support/fake-cluster.js';

const pods = (
  prefix: string,
  rows: readonly (readonly [rps: number, connections: number, ageMinutes: number, zone?: string])[],
  extra: Partial<FakePodSpec> = {},
): FakePodSpec[] =>
  rows.map(([rps, connections, ageMinutes, zone], i) => ({
    name: `${prefix}-${i + 1}`,
    requestsPerSecond: rps,
    connections,
    ageMinutes,
    ...(zone === undefined ? {} : { zone }),
    ...extra,
  }));

export interface CauseCase {
  readonly cause: Cause;
  readonly spec: FakeClusterSpec;
}

export const CAUSE_CASES: readonly CauseCase[] = [
  {
    // 8 long-lived connections placed 1/5/1/1 by kube-proxy long ago; the skew holds.
    cause: 'kube-proxy-pinning',
    spec: {
      kubeProxy: { mode: 'iptables' },
      pods: pods('web-7d9f8-a', [
        [60, 1, 600],
        [220, 5, 599.5],
        [60, 1, 599],
        [60, 1, 598.8],
      ]).map((p, i) => ({ ...p, earlierRequestsPerSecond: [62, 215, 61, 62][i] })),
    },
  },
  {
    // An HPA added four pods ten minutes ago; the old pods' connections never moved.
    cause: 'scale-out-starvation',
    spec: {
      kubeProxy: { mode: 'iptables' },
      pods: pods('web-7d9f8-b', [
        [100, 4, 300],
        [95, 4, 300],
        [105, 4, 299.5],
        [100, 4, 299.5],
        [1, 0, 10],
        [0, 0, 10],
        [0.5, 0, 9.8],
        [0, 0, 9.8],
      ]),
    },
  },
  {
    // A rollout one pod a minute: each replaced pod's connections landed on the pods ready then.
    cause: 'rolling-update-pile-up',
    spec: {
      kubeProxy: { mode: 'iptables' },
      pods: pods(
        'web-5c6b7-c',
        [
          [160, 8, 30],
          [120, 6, 29],
          [80, 4, 28],
          [40, 2, 27],
        ],
        { revision: '5c6b7' },
      ),
    },
  },
  {
    // An admission webhook: kube-apiserver's legacy pool sends nearly everything to one pod.
    cause: 'apiserver-webhook-pool',
    spec: {
      webhook: true,
      pods: pods('policy-6f5d4', [
        [95, 1, 120],
        [3, 1, 119],
        [2, 1, 118.5],
      ]),
    },
  },
  {
    cause: 'client-address-hashing',
    spec: {
      kubeProxy: { mode: 'ipvs', scheduler: 'sh' },
      pods: pods('web-7d9f8-d', [
        [50, 2, 600],
        [150, 6, 599.5],
        [150, 6, 599],
        [50, 2, 598.9],
      ]),
    },
  },
  {
    // Two pods in zone a serve zone a's clients (topology-aware routing); four share zone b.
    cause: 'zone-skew',
    spec: {
      kubeProxy: { mode: 'iptables' },
      pods: pods('web-7d9f8-e', [
        [50, 4, 600, 'zone-b'],
        [150, 12, 599.6, 'zone-a'],
        [52, 4, 599.5, 'zone-b'],
        [148, 12, 599.4, 'zone-a'],
        [49, 4, 599.3, 'zone-b'],
        [51, 4, 599.2, 'zone-b'],
      ]),
    },
  },
  {
    cause: 'balanced',
    spec: {
      kubeProxy: { mode: 'iptables' },
      pods: pods('web-7d9f8-f', [
        [100, 16, 600],
        [98, 16, 599.5],
        [103, 16, 599],
        [99, 16, 598.9],
      ]),
    },
  },
];
