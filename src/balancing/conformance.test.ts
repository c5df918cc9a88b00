/**
 * The conformance suite every registered balancing policy passes. It iterates
 * `registeredPolicies()` after `ensureBuiltinPolicies()`, so a policy registered in
 * `policies/index.ts` is tested here without another line. Behaviour specific to one policy
 * (rotation order, ring layout) lives beside that policy; this file holds the contract:
 * eligibility, empty and huge sets, spread, weights, determinism, exclusion, load avoidance and
 * consistent-hash disruption. Randomness is seeded and time is a `ManualClock`, so every figure
 * below is reproducible; tolerances are ratios of the expected share.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import type { EndpointInput } from '../core/endpoint.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { ErrorCodes } from '../core/errors.js';
import { SeededRandom } from '../core/random.js';
import { Balancer } from './balancer.js';
import { hashKey, type PickContext, type Picker } from './picker.js';
import { ensureBuiltinPolicies } from './policies/index.js';
import { type BalancingPolicy, registeredPolicies } from './policy.js';

ensureBuiltinPolicies();
const policies = registeredPolicies();

/**
 * Share tolerance (± ratio of the expected share) over 100,000 picks or distinct keys.
 * `ring-hash` is looser by construction: with 256 points per endpoint each endpoint's arc of
 * the ring varies by about 1/√256 ≈ 6% (one standard deviation), so ±20% holds for ten
 * endpoints with margin. Everything else: ±5%.
 */
const shareTolerance: Readonly<Record<string, number>> = { 'ring-hash': 0.2 };
const tolerance = (policy: BalancingPolicy): number => shareTolerance[policy.name] ?? 0.05;

const KEYS = 100_000;
/** Distinct request keys, as a client address or header would give. */
const keyHashes = Array.from({ length: KEYS }, (_, i) => hashKey(`client-${i}`));

function inputs(n: number, extra: (i: number) => Partial<EndpointInput> = () => ({})): EndpointInput[] {
  return Array.from({ length: n }, (_, i) => ({
    address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    port: 8443,
    ...extra(i),
  }));
}

function balancer(policy: BalancingPolicy, seed = 1, policyOptions?: unknown): { b: Balancer; clock: ManualClock } {
  const clock = new ManualClock();
  return { b: new Balancer({ policy: policy.name, policyOptions, clock, random: new SeededRandom(seed) }), clock };
}

/** Picks `count` times; hash policies get a distinct key per pick. Returns picked keys in order. */
function pickKeys(policy: BalancingPolicy, picker: Picker, count: number, context: PickContext = {}): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    if (policy.kind === 'hash') context.hash = keyHashes[i % KEYS];
    const r = picker.pick(context);
    if (r.type !== 'picked') throw new Error(`pick ${i} returned none (${r.reason})`);
    out.push(r.endpoint.key);
  }
  return out;
}

function tally(keys: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const k of keys) m.set(k, (m.get(k) ?? 0) + 1);
  return m;
}

describe.each(policies.map((p) => [p.name, p] as const))('policy %s', (_name, policy) => {
  it('parses its defaults and rejects an unknown option naming the policy', () => {
    expect(() => policy.parseOptions(undefined)).not.toThrow();
    expect(() => policy.parseOptions({ noSuchOption: 1 })).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_OPTION, message: expect.stringContaining(policy.name) }),
    );
  });

  it('returns the preallocated result of a current endpoint, never a copy', () => {
    const { b } = balancer(policy);
    b.update(EndpointSet.from(inputs(7)));
    const picker = b.picker;
    const ctx: PickContext = {};
    for (let i = 0; i < 500; i++) {
      if (policy.kind === 'hash') ctx.hash = keyHashes[i];
      const r = picker.pick(ctx);
      expect(picker.endpoints.some((t) => t.result === r)).toBe(true);
    }
  });

  const noneCases: { name: string; endpoints: EndpointInput[]; ejected: number[]; reason: string }[] = [
    { name: 'no endpoint at all', endpoints: [], ejected: [], reason: 'no-endpoints' },
    {
      name: 'none ready and none serving-and-terminating',
      endpoints: inputs(3, (i) => ({ conditions: { ready: false, serving: false, terminating: i === 0 } })),
      ejected: [],
      reason: 'none-ready',
    },
    { name: 'every eligible endpoint ejected', endpoints: inputs(3), ejected: [0, 1, 2], reason: 'all-ejected' },
  ];
  it.each(noneCases)('picks none with reason $reason when $name', (c) => {
    const { b } = balancer(policy);
    const set = EndpointSet.from(c.endpoints);
    b.update(set);
    b.setEjected(new Set(c.ejected.map((i) => set.endpoints[i]!.key)));
    expect(b.picker.endpoints).toHaveLength(0);
    expect(b.picker.pick()).toEqual({ type: 'none', reason: c.reason });
    expect(b.picker.pick({ hash: 42, exclude: 'x' })).toEqual({ type: 'none', reason: c.reason });
  });

  it('always picks the only endpoint, even when told to exclude it', () => {
    const { b } = balancer(policy);
    b.update(EndpointSet.from(inputs(1)));
    const only = b.endpointSet.endpoints[0]!.key;
    expect(new Set(pickKeys(policy, b.picker, 1000))).toEqual(new Set([only]));
    expect(new Set(pickKeys(policy, b.picker, 100, { exclude: only }))).toEqual(new Set([only]));
  });

  it('never picks a not-ready, ejected or removed endpoint', () => {
    const { b } = balancer(policy);
    // 0-5 ready, 6-7 not serving, 8-9 serving and terminating (not eligible while any is ready).
    const set = EndpointSet.from(
      inputs(10, (i) =>
        i >= 8
          ? { conditions: { ready: false, serving: true, terminating: true } }
          : i >= 6
            ? { conditions: { ready: false, serving: false } }
            : {},
      ),
    );
    b.update(set);
    const key = (i: number): string => set.endpoints[i]!.key;
    b.setEjected(new Set([key(1)]));
    let allowed = new Set([0, 2, 3, 4, 5].map(key));
    const first = tally(pickKeys(policy, b.picker, 20_000));
    expect(new Set(first.keys())).toEqual(allowed);

    // Remove 2 and 3 in a new snapshot; the ejection of 1 still holds.
    b.update(new EndpointSet(set.endpoints.filter((_, i) => i !== 2 && i !== 3)));
    allowed = new Set([0, 4, 5].map(key));
    expect(new Set(tally(pickKeys(policy, b.picker, 20_000)).keys())).toEqual(allowed);
  });

  it('falls back to serving-and-terminating endpoints only when none is ready (kube-proxy rule)', () => {
    const { b } = balancer(policy);
    const terminating = { conditions: { ready: false, serving: true, terminating: true } };
    const gone = { conditions: { ready: false, serving: false, terminating: true } };
    const set = EndpointSet.from(inputs(4, (i) => (i < 2 ? terminating : gone)));
    b.update(set);
    expect(new Set(pickKeys(policy, b.picker, 5000))).toEqual(new Set([set.endpoints[0]!.key, set.endpoints[1]!.key]));

    // One endpoint becomes ready: the terminating ones get nothing more.
    const next = EndpointSet.from(inputs(4, (i) => (i < 2 ? terminating : i === 2 ? {} : gone)));
    b.update(next);
    expect(new Set(pickKeys(policy, b.picker, 5000))).toEqual(new Set([next.endpoints[2]!.key]));
  });

  it('handles 10,000 endpoints: every pick valid, picks spread over the set', () => {
    const { b } = balancer(policy);
    b.update(EndpointSet.from(inputs(10_000)));
    const counts = tally(pickKeys(policy, b.picker, KEYS));
    for (const k of counts.keys()) expect(b.endpointSet.has(k)).toBe(true);
    // 10 picks per endpoint on average: a fair picker leaves almost none unpicked (e^-10 each).
    expect(counts.size).toBeGreaterThan(9_900);
  });

  it(`gives each of 10 equal endpoints its share within ±${tolerance(policy) * 100}% over 100,000 picks`, () => {
    const { b } = balancer(policy);
    b.update(EndpointSet.from(inputs(10)));
    const counts = tally(pickKeys(policy, b.picker, KEYS));
    expect(counts.size).toBe(10);
    for (const c of counts.values()) expect(Math.abs(c / (KEYS / 10) - 1)).toBeLessThanOrEqual(tolerance(policy));
  });

  it(policy.ignoresWeights ? 'ignores weights (equal shares)' : 'honours weights 1:2:3:4', () => {
    const weights = [1, 2, 3, 4];
    const { b } = balancer(policy);
    const set = EndpointSet.from(inputs(4, (i) => ({ weight: weights[i] })));
    b.update(set);
    const counts = tally(pickKeys(policy, b.picker, KEYS));
    set.endpoints.forEach((e, i) => {
      const expected = policy.ignoresWeights ? KEYS / 4 : (KEYS * weights[i]!) / 10;
      expect(Math.abs((counts.get(e.key) ?? 0) / expected - 1)).toBeLessThanOrEqual(tolerance(policy));
    });
  });

  it(`${policy.ignoresWeights ? 'ignores' : 'honours'} weights 1:2:3:4 under load (virtual time, equal latency)`, () => {
    // Open loop: a request every 0.25 ms, each answered in 10 ms (~40 in flight), so load-aware
    // policies see in-flight counts and latencies, not the idle tie of the test above.
    const weights = [1, 2, 3, 4];
    const { b, clock } = balancer(policy, 5);
    const set = EndpointSet.from(inputs(4, (i) => ({ weight: weights[i] })));
    b.update(set);
    const counts = new Map<string, number>();
    const total = policy.kind === 'hash' ? KEYS : 40_000;
    const ctx: PickContext = {};
    for (let i = 0; i < total; i++) {
      clock.advance(0.25);
      if (policy.kind === 'hash') ctx.hash = keyHashes[i];
      const r = b.picker.pick(ctx);
      if (r.type !== 'picked') throw new Error('no endpoint');
      counts.set(r.endpoint.key, (counts.get(r.endpoint.key) ?? 0) + 1);
      const started = r.load.start();
      clock.setTimeout(() => r.load.end(started, true), 10);
    }
    set.endpoints.forEach((e, i) => {
      const expected = policy.ignoresWeights ? total / 4 : (total * weights[i]!) / 10;
      expect(Math.abs((counts.get(e.key) ?? 0) / expected - 1)).toBeLessThanOrEqual(tolerance(policy));
    });
  });

  it('repeats the same pick sequence from the same seed', () => {
    const run = (seed: number, withKeys: boolean): string[] => {
      const { b } = balancer(policy, seed);
      b.update(EndpointSet.from(inputs(20, (i) => ({ weight: 1 + (i % 3) }))));
      b.update(EndpointSet.from(inputs(25, (i) => ({ weight: 1 + (i % 3) }))));
      if (withKeys) return pickKeys(policy, b.picker, 2000);
      // Hash policies without a key draw a random one from the same seeded source.
      return Array.from({ length: 2000 }, () => {
        const r = b.picker.pick();
        return r.type === 'picked' ? r.endpoint.key : r.reason;
      });
    };
    expect(run(7, true)).toEqual(run(7, true));
    expect(run(7, false)).toEqual(run(7, false));
  });

  it('honours exclude when another endpoint is eligible', () => {
    const { b } = balancer(policy);
    b.update(EndpointSet.from(inputs(5)));
    const keys = b.endpointSet.endpoints.map((e) => e.key);
    const ctx: PickContext = {};
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      ctx.exclude = keys[i % 5];
      if (policy.kind === 'hash') ctx.hash = keyHashes[i];
      const r = b.picker.pick(ctx);
      expect(r.type === 'picked' && r.endpoint.key).not.toBe(ctx.exclude);
      if (r.type === 'picked') seen.add(r.endpoint.key);
    }
    expect(seen.size).toBe(5);
  });
});

describe('load-aware policies avoid a loaded endpoint', () => {
  const cases: { policy: string; signal: 'in-flight' | 'latency' }[] = [
    { policy: 'least-request', signal: 'in-flight' },
    { policy: 'least-request', signal: 'latency' },
    { policy: 'peak-ewma', signal: 'in-flight' },
    { policy: 'peak-ewma', signal: 'latency' },
    // Without a prober (as here) prequal falls back to least-request on its own load view.
    { policy: 'prequal', signal: 'in-flight' },
    { policy: 'prequal', signal: 'latency' },
  ];
  it('covers every registered load-aware policy', () => {
    // A registered policy that reads load signals must be added to `cases`.
    const loadAware = ['least-request', 'peak-ewma', 'prequal'];
    for (const name of loadAware) expect(policies.some((p) => p.name === name)).toBe(true);
  });

  it.each(cases)('$policy sends < 15% of picks to one of 4 endpoints whose $signal is 10×', ({ policy, signal }) => {
    const clock = new ManualClock();
    const b = new Balancer({ policy, clock, random: new SeededRandom(3) });
    b.update(EndpointSet.from(inputs(4)));
    const hot = b.endpointSet.endpoints[0]!.key;
    let hotPicks = 0;
    const total = 20_000;
    if (signal === 'in-flight') {
      // Static load: 2 requests in flight on each endpoint, 20 on the hot one; picks start nothing.
      for (const t of b.picker.endpoints) for (let i = 0; i < (t.endpoint.key === hot ? 20 : 2); i++) t.load.start();
      for (let i = 0; i < total; i++) {
        const r = b.picker.pick();
        if (r.type === 'picked' && r.endpoint.key === hot) hotPicks++;
      }
    } else {
      // Open loop on virtual time: a request every 0.5 ms; the hot endpoint answers in 100 ms,
      // the others in 10 ms. Picks start requests and completions end them.
      for (let i = 0; i < total; i++) {
        clock.advance(0.5);
        const r = b.picker.pick();
        if (r.type !== 'picked') throw new Error('no endpoint');
        const slow = r.endpoint.key === hot;
        if (slow) hotPicks++;
        const started = r.load.start();
        clock.setTimeout(() => r.load.end(started, true), slow ? 100 : 10);
      }
      clock.advance(1000);
      for (const t of b.picker.endpoints) expect(t.load.inFlight).toBe(0);
    }
    expect(hotPicks / total).toBeLessThan(0.15);
  });
});

describe('consistent hashing moves few keys', () => {
  const owners = (b: Balancer): string[] => {
    const ctx: PickContext = {};
    return keyHashes.map((h) => {
      ctx.hash = h;
      const r = b.picker.pick(ctx);
      return r.type === 'picked' ? r.endpoint.key : r.reason;
    });
  };
  const moved = (a: readonly string[], b: readonly string[]): number => a.filter((k, i) => k !== b[i]).length / KEYS;

  const cases: { policy: string; n: number; change: 'add' | 'remove'; atMost: number }[] = [
    { policy: 'ring-hash', n: 10, change: 'add', atMost: 1.3 / 10 },
    { policy: 'ring-hash', n: 100, change: 'add', atMost: 1.3 / 100 },
    { policy: 'ring-hash', n: 100, change: 'remove', atMost: 1.3 / 100 },
    { policy: 'maglev', n: 10, change: 'add', atMost: 1.3 / 10 },
    { policy: 'maglev', n: 100, change: 'add', atMost: 1.3 / 100 },
    { policy: 'maglev', n: 100, change: 'remove', atMost: 1.3 / 100 },
  ];
  it.each(cases)('$policy: $change one endpoint to/from $n moves at most 1.3/N of 100,000 keys', (c) => {
    const b = new Balancer({ policy: c.policy, clock: new ManualClock(), random: new SeededRandom(1) });
    const n = c.change === 'add' ? c.n : c.n + 1;
    b.update(EndpointSet.from(inputs(n)));
    const before = owners(b);
    b.update(EndpointSet.from(inputs(c.change === 'add' ? n + 1 : n - 1)));
    const after = owners(b);
    expect(moved(before, after)).toBeLessThanOrEqual(c.atMost);
    // Only keys of the removed endpoint, or keys now on the added one, may have to move.
    if (c.change === 'add') expect(moved(before, after)).toBeGreaterThan(0.7 / (n + 1));
  });

  it('source-hash is not consistent: adding one endpoint to 10 moves most keys', () => {
    const b = new Balancer({ policy: 'source-hash', clock: new ManualClock(), random: new SeededRandom(1) });
    b.update(EndpointSet.from(inputs(10)));
    const before = owners(b);
    b.update(EndpointSet.from(inputs(11)));
    expect(moved(before, owners(b))).toBeGreaterThan(0.8);
  });

  it.each(policies.filter((p) => p.kind === 'hash').map((p) => p.name))(
    '%s maps a key to the same endpoint whatever order discovery lists endpoints in',
    (policy) => {
      const list = inputs(30, (i) => ({ weight: 1 + (i % 2) }));
      const a = new Balancer({ policy, clock: new ManualClock(), random: new SeededRandom(1) });
      const b = new Balancer({ policy, clock: new ManualClock(), random: new SeededRandom(2) });
      a.update(EndpointSet.from(list));
      b.update(EndpointSet.from([...list].reverse()));
      expect(owners(a)).toEqual(owners(b));
    },
  );
});
