/**
 * `evenlb sim` refuses, at once, a fleet of balancers too large to model: every evenlb balancer
 * keeps a load record per pod, so the default scope (one balancer per client) at 10,000 clients
 * over 10,000 pods asks for 10^8 records — before the limit, that run spent minutes and died of
 * heap exhaustion. The CLI must exit 2 before simulating anything, naming the product, the
 * limit and both ways out; within the limit the check lets the scenario through.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import { checkLoadRecords, MAX_LOAD_RECORDS } from '../../src/sim/dataplane/evenlb/balancer-picker.js';
import { resolveDataplanes } from '../../src/sim/dataplane/registry.js';
import { runScenario } from '../../src/sim/run-simulation.js';
import { parseScenario } from '../../src/sim/scenario/scenario-spec.js';
import { buildCli, runCli } from '../support/run-cli.js';

let cli: string;

beforeAll(() => {
  cli = buildCli('evenlb-sim-load-records-test');
});

/** The fleet-scale command of issue #17, as written there (default balancer scope). */
const fleetScale = [
  'sim',
  '--scenario',
  'steady',
  '--pods',
  '10000',
  '--connections',
  '1000000',
  '--clients',
  '10000',
  '--rate',
  '100',
  '--duration',
  '10s',
  '--dataplanes',
  'iptables,evenlb:least-request',
];

/** A scenario of `clients` clients over `pods` pods (parsing only: nothing here runs it). */
function fleet(clients: number, pods: number, extra: Record<string, unknown> = {}) {
  return parseScenario(
    {
      name: 'fleet',
      pods: { count: pods },
      clients: { count: clients, connections: clients, ...extra },
      measure: { windowMs: 1_000 },
    },
    'fleet',
  );
}

describe('evenlb sim: load records limit', () => {
  it('exits 2 at once for 10,000 per-client balancers over 10,000 pods, naming the product, the limit and the fix', async () => {
    const r = await runCli(cli, fleetScale, { timeoutMs: 30_000 });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('evenlb:least-request: 10,000 balancers (balancer scope "client": one per client)');
    expect(r.stderr).toContain('× 10,000 pods = 100,000,000 load records');
    expect(r.stderr).toContain(`limit of ${MAX_LOAD_RECORDS.toLocaleString('en-US')}`);
    expect(r.stderr).toContain('--balancers M');
    expect(r.stderr).toContain('--balancer-scope shared');
  });

  it('lets through what fits: 100 replicas, one shared balancer, a hash policy (one table)', () => {
    const [leastRequest, ringHash] = resolveDataplanes(['evenlb:least-request', 'evenlb:ring-hash']);
    expect(() => leastRequest?.check?.(fleet(10_000, 10_000, { balancers: 100 }))).not.toThrow();
    expect(() => leastRequest?.check?.(fleet(10_000, 10_000, { balancerScope: 'shared' }))).not.toThrow();
    expect(() => ringHash?.check?.(fleet(10_000, 10_000))).not.toThrow();
    expect(() => checkLoadRecords(fleet(2_000, 2_000), 'evenlb:least-request', 'load')).not.toThrow();
  });

  it('counts the pods a scale-out reaches, and runScenario checks before simulating', () => {
    const scaled = parseScenario(
      {
        name: 'scaled',
        pods: { count: 10 },
        clients: { count: 1_000, connections: 1_000 },
        events: [{ type: 'scale', atMs: 1_000, pods: 5_000 }],
        measure: { windowMs: 1_000 },
      },
      'scaled',
    );
    expect(() => checkLoadRecords(scaled, 'evenlb:least-request', 'load')).toThrow(
      /1,000 balancers .* × 5,000 pods = 5,000,000 load records/,
    );
    // The iptables run listed first would take long at this size; the check comes before it.
    let progress = 0;
    expect(() =>
      runScenario({
        scenario: scaled,
        dataplanes: resolveDataplanes(['iptables', 'evenlb:least-request']),
        seed: 1,
        onProgress: () => progress++,
      }),
    ).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_OPTION }));
    expect(progress).toBe(0);
  });
});
