/**
 * The built-in scenarios, as raw scenario objects — the same shape a `--scenario-file` YAML
 * has, and validated by the same parser. Each reproduces one way a Service's load goes
 * uneven (or one check against a closed form), with defaults small enough to run in about a
 * second and large enough that per-request noise stays well under the effects shown.
 */

export interface BuiltinScenario {
  readonly name: string;
  readonly summary: string;
  /** A fresh raw (unvalidated) scenario object; callers may patch it before parsing. */
  readonly raw: () => Record<string, unknown>;
}

const evenlbAndApiserver = ['apiserver-legacy', 'apiserver-roundtrip', 'evenlb:*'];

export const builtinScenarios: readonly BuiltinScenario[] = [
  {
    name: 'steady',
    summary: 'long-lived connections that never reconnect: the skew their placement leaves',
    raw: () => ({
      name: 'steady',
      description:
        '8 clients hold 16 long-lived connections to 4 single-worker pods (50% busy on average) and send Poisson traffic; nothing changes.',
      pods: { count: 4, workers: 1 },
      clients: { count: 8, connections: 16, arrival: { type: 'poisson', ratePerSecond: 50 } },
      measure: { from: 'start', windowMs: 300_000 },
    }),
  },
  {
    name: 'rolling-update',
    summary: 'a rolling update (maxSurge, maxUnavailable): reconnects pile onto the first new pods',
    raw: () => ({
      name: 'rolling-update',
      description:
        'Every pod is replaced one step at a time; connections to a removed pod reconnect over the pods ready at that moment. Measured after the rollout.',
      pods: { count: 4, workers: 2, readyDelayMs: 2000 },
      clients: { count: 100, connections: 2000, arrival: { type: 'poisson', ratePerSecond: 10 } },
      events: [{ type: 'rolling-update', atMs: 5000, maxSurge: 1, maxUnavailable: 0 }],
      measure: { from: 'settled', windowMs: 60_000 },
    }),
  },
  {
    name: 'hpa-scale-out',
    summary: 'an HPA scale-out K → K′: new pods get nothing until connections are re-dialled',
    raw: () => ({
      name: 'hpa-scale-out',
      description:
        'The HPA scales 4 pods running at 90% to 8; existing connections stay where they are unless a lifetime limit (--max-age, --max-requests) re-dials them.',
      bucketMs: 5000,
      pods: { count: 4, workers: 1, serviceTime: { type: 'exponential', meanMs: 7.2 }, readyDelayMs: 2000 },
      clients: { count: 100, connections: 2000, arrival: { type: 'poisson', ratePerSecond: 5 } },
      events: [{ type: 'scale', atMs: 10_000, pods: 8 }],
      measure: { from: 'settled', windowMs: 240_000 },
    }),
  },
  {
    name: 'heterogeneous-durations',
    summary: 'connections of very different durations: dial-time balancing cannot see which ones stay',
    raw: () => ({
      name: 'heterogeneous-durations',
      description:
        '50 clients hold one connection each; sessions have heavy-tailed lifetimes (log-normal, mean 30 s, sigma 2) and are re-dialled as they end, so the load follows the few long-lived ones. rr and random spread dials, lc counts open connections on its own node only. Measured after a 60 s warm-up, over 3 trials.',
      trials: 3,
      pods: { count: 4, workers: 4 },
      clients: {
        count: 50,
        connections: 50,
        arrival: { type: 'poisson', ratePerSecond: 10 },
        connectionLifetime: { type: 'lognormal', meanMs: 30_000, sigma: 2 },
      },
      measure: { from: 60_000, windowMs: 120_000 },
    }),
  },
  {
    name: 'webhook-burst',
    summary: 'admission bursts from 3 apiservers through the legacy and round-trip webhook clients',
    raw: () => ({
      name: 'webhook-burst',
      description:
        '3 kube-apiservers call a 3-replica admission webhook: a steady trickle plus a burst of 200 requests each every 10 s.',
      pods: { count: 3, workers: 16, serviceTime: { type: 'exponential', meanMs: 20 } },
      clients: { count: 3, connections: 3, arrival: { type: 'poisson', ratePerSecond: 50 } },
      events: [{ type: 'burst', atMs: 5000, requestsPerClient: 200, spreadMs: 200, everyMs: 10_000 }],
      measure: { from: 'start', windowMs: 120_000 },
      dataplanes: evenlbAndApiserver,
    }),
  },
  {
    name: 'random-connections',
    summary: 'C connections over K pods, many trials: the closed form of random placement',
    raw: () => ({
      name: 'random-connections',
      description:
        'C clients each open one connection and send the same number of evenly spaced requests; repeated over many trials. For a per-connection dataplane each pod gets requests in proportion to its connections, so max/mean is that of the placement.',
      trials: 20,
      pods: { count: 4 },
      clients: { connections: 8, arrival: { type: 'periodic', ratePerSecond: 2, count: 1000 } },
      measure: { from: 'start' },
    }),
  },
];

/** The built-in scenario `name`, or undefined. */
export function findBuiltinScenario(name: string): BuiltinScenario | undefined {
  return builtinScenarios.find((s) => s.name === name);
}
