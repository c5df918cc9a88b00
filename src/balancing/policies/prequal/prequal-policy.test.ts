import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../core/clock.js';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { ErrorCodes } from '../../../core/errors.js';
import { SeededRandom } from '../../../core/random.js';
import { Balancer } from '../../balancer.js';
import type { TrackedEndpoint } from '../../picker.js';
import type { LoadProber } from '../../policy.js';
import { endpointInputs, pickKeys, tally } from '../../testing/fixtures.js';
import { prequalPolicy, probeUses } from './prequal-policy.js';
import { FIRST_REUSE_WINDOW_PICKS, ProbePool, REUSE_WINDOW_PICKS, reuseBudget } from './probe-pool.js';
import { RifQuantile } from './rif-quantile.js';

/** Queues probes; the test answers them when it likes, as a transport would later. */
class QueuedProber implements LoadProber {
  readonly queued: TrackedEndpoint[] = [];
  sent = 0;
  probe(target: TrackedEndpoint): void {
    this.sent++;
    this.queued.push(target);
  }
  /** Answers every queued probe with `state(position)` = [in flight, latency ms]. */
  answer(keys: readonly string[], state: (i: number) => readonly [number, number]): void {
    for (const t of this.queued.splice(0)) {
      const [rif, latencyMs] = state(keys.indexOf(t.endpoint.key));
      t.load.probed(rif, latencyMs);
    }
  }
}

function setup(n: number, policyOptions: Record<string, unknown> = {}, seed = 5) {
  const clock = new ManualClock();
  const prober = new QueuedProber();
  const b = new Balancer({
    policy: 'prequal',
    policyOptions,
    clock,
    random: new SeededRandom(seed),
    prober,
    herdingGuard: false,
  });
  b.update(EndpointSet.from(endpointInputs(n)));
  const keys = b.endpointSet.endpoints.map((e) => e.key);
  return { b, clock, prober, keys };
}

/**
 * Picks one at a time on virtual time (a pick per ms), answering queued probes with `state`
 * before each pick; each pick starts a request that ends `serviceMs` later, as a transport's.
 */
function picksWithAnswers(
  s: ReturnType<typeof setup>,
  count: number,
  state: (i: number) => readonly [number, number],
  serviceMs = 2,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    s.prober.answer(s.keys, state);
    s.clock.advance(1);
    const r = s.b.picker.pick();
    if (r.type !== 'picked') throw new Error('no endpoint');
    out.push(r.endpoint.key);
    const started = r.load.start();
    s.clock.setTimeout(() => r.load.end(started, true), serviceMs);
  }
  return out;
}

/**
 * Picks one per ms, probes never answered; each request ends 4 ms later with a load report of
 * the server's in-flight — this balancer's requests there, plus 40 from others on endpoint
 * `busy` — and, when given, `latencyMs` as `latency_ms`.
 */
function picksWithReports(s: ReturnType<typeof setup>, count: number, busy: number, latencyMs?: number): string[] {
  const picks: string[] = [];
  for (let i = 0; i < count; i++) {
    s.prober.queued.splice(0);
    const r = s.b.picker.pick();
    if (r.type !== 'picked') throw new Error('no endpoint');
    picks.push(r.endpoint.key);
    const background = r.endpoint.key === s.keys[busy] ? 40 : 0;
    const started = r.load.start();
    s.clock.setTimeout(() => {
      const inflight = background + r.load.inFlight;
      r.load.report({ namedMetrics: latencyMs === undefined ? { inflight } : { inflight, latency_ms: latencyMs } });
      r.load.end(started, true);
    }, 4);
    s.clock.advance(1);
  }
  return picks;
}

describe('prequal', () => {
  it('without a prober picks exactly as least-request from the same seed', () => {
    const run = (policy: string): string[] => {
      const b = new Balancer({ policy, clock: new ManualClock(), random: new SeededRandom(12) });
      b.update(EndpointSet.from(endpointInputs(9, (i) => ({ weight: 1 + (i % 3) }))));
      b.picker.endpoints.forEach((t, i) => {
        for (let k = 0; k < i % 4; k++) t.load.start();
      });
      return pickKeys(b, 3000);
    };
    expect(run('prequal')).toEqual(run('least-request'));
  });

  it('spends its probe budget: probesPerRequest × picks, to uniformly random endpoints', () => {
    const s = setup(10, { probesPerRequest: 0.05 });
    const targets: string[] = [];
    for (let i = 0; i < 40_000; i++) {
      pickKeys(s.b, 1);
      for (const t of s.prober.queued.splice(0)) targets.push(t.endpoint.key);
    }
    expect(Math.abs(targets.length - 2000)).toBeLessThanOrEqual(1);
    for (const c of tally(targets).values()) expect(Math.abs(c / 200 - 1)).toBeLessThan(0.25);
  });

  it('sends several probes per pick when probesPerRequest is above one', () => {
    const s = setup(10, { probesPerRequest: 3 });
    pickKeys(s.b, 1000);
    expect(s.prober.sent).toBe(3000);
  });

  it("scales a cold answer's latency by its own requests since, so a fast endpoint does not draw every pick", () => {
    // Endpoints 0 and 1 answered 2 in flight at 10 and 12 ms; 2 and 3, 9 at 50 ms: the line is
    // 9, so 0 stays cold for 7 more requests. Read as answered, 0 would take the next 8 picks;
    // with its latency scaled by (RIF now + 1) / (RIF answered + 1), 0 and 1 take turns.
    const s = setup(4, { probesPerRequest: 1, maxProbeUses: 1000 });
    const state = (i: number): [number, number] => [[2, 2, 9, 9][i]!, [10, 12, 50, 50][i]!];
    picksWithAnswers(s, 200, state);
    s.clock.advance(10);
    s.prober.queued.splice(0);
    for (const t of s.b.picker.endpoints) t.load.probed(...state(s.keys.indexOf(t.endpoint.key)));
    const picks: string[] = [];
    for (let i = 0; i < 8; i++) {
      s.clock.advance(0.1);
      const r = s.b.picker.pick();
      if (r.type !== 'picked') throw new Error('no endpoint');
      picks.push(r.endpoint.key);
      r.load.start();
      s.prober.queued.splice(0);
    }
    // 0 at 10, 13.3, 16.7, 20 ms; 1 at 12, 16, 20 ms: 0 1 0 1 0 1 0 (a tie at 20 ms, lower RIF first) …
    const counts = tally(picks);
    expect(counts.get(s.keys[0]!)).toBeLessThanOrEqual(5);
    expect(counts.get(s.keys[1]!)).toBeGreaterThanOrEqual(3);
    expect(picks.slice(0, 4)).toEqual([s.keys[0], s.keys[1], s.keys[0], s.keys[1]]);
  });

  it('sets its reuse budget from the answers it takes per pick: about 2 with a report per response, 50 on probes alone', () => {
    const b = new Balancer({ policy: 'least-request', clock: new ManualClock(), random: new SeededRandom(1) });
    b.update(EndpointSet.from(endpointInputs(4)));
    const endpoints = b.picker.endpoints;
    const pool = new ProbePool({
      poolSize: 16,
      maxProbeUses: { initial: 50 },
      maxProbeAgeMs: 1000,
      coldQuantile: 0.84,
    });
    expect(pool.rebind(endpoints, new Float64Array(4).fill(1))).toBe(true);
    for (const [i, t] of endpoints.entries()) pool.admit(i, t.endpoint.key, t.load.index);
    expect(pool.maxUses).toBe(50);
    let nowMs = 0;
    const answer = (i: number): void =>
      endpoints[i % 4]!.load.report({ namedMetrics: { inflight: 1, latency_ms: 5 } }, ++nowMs);
    // A report on (nearly) every response: 9 answers in 10 picks. The first window is short (a
    // balancer picking 27 times a second would keep 50 uses for 9.5 s of 256-pick windows).
    for (let i = 0; i < FIRST_REUSE_WINDOW_PICKS; i++) {
      if (i % 10 !== 9) answer(i);
      pool.select();
    }
    expect(pool.maxUses).toBe(2);
    for (let i = 0; i < 2 * REUSE_WINDOW_PICKS; i++) {
      if (i % 10 !== 9) answer(i);
      pool.select();
    }
    expect(pool.maxUses).toBe(2);
    // Probes alone at 0.04 per pick: 2 / 0.04 = 50, give or take the window's rounding.
    for (let i = 0; i < 2 * REUSE_WINDOW_PICKS; i++) {
      if (i % 25 === 0) endpoints[i % 4]!.load.probed(1, 5, ++nowMs);
      pool.select();
    }
    expect(Math.abs(pool.maxUses / 50 - 1)).toBeLessThan(0.1);
  });

  it("fills its pool with the probes sent before any answer came, instead of each taking the last one's slot", () => {
    const s = setup(4, { probesPerRequest: 1, maxProbeUses: 1000 });
    // 12 picks, no answer yet: every endpoint gets probed (and pooled); then all answers arrive.
    pickKeys(s.b, 12);
    expect(new Set(s.prober.queued.map((t) => t.endpoint.key)).size).toBe(4);
    s.prober.answer(s.keys, (i) => (i === 0 ? [0, 1] : [3, 30]));
    // Endpoint 0 is cold and fastest: the pool sends it the next picks (requests held open).
    const picks: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = s.b.picker.pick();
      if (r.type !== 'picked') throw new Error('no endpoint');
      picks.push(r.endpoint.key);
      r.load.start();
      s.prober.queued.splice(0);
    }
    expect(picks).toEqual([s.keys[0], s.keys[0], s.keys[0]]);
  });

  it('sends the fastest cold endpoints most, and a hot one little though it is fastest (hot/cold rule)', () => {
    // 16 endpoints: 15 with 1 in flight and latencies 20..6 ms, the last with 8 in flight and
    // 1 ms. 1/16 of answers say 8, so the 0.84 quantile of the last 64 is 1: the last is hot.
    const s = setup(16, { probesPerRequest: 1, maxProbeUses: 1000 });
    const state = (i: number): [number, number] => (i === 15 ? [8, 1] : [1, 20 - i]);
    picksWithAnswers(s, 400, state);
    const counts = tally(picksWithAnswers(s, 4000, state));
    const share = (i: number): number => (counts.get(s.keys[i]!) ?? 0) / 4000;
    expect(share(15)).toBeLessThan(0.02);
    expect(share(14)).toBeGreaterThan(share(0));
  });

  it('takes the lowest in flight when every answer is hot', () => {
    const s = setup(4, { probesPerRequest: 1, maxProbeUses: 1000, coldQuantile: 0 });
    // Quantile 0: the line is the smallest answer; a request sent makes that endpoint hot at once.
    const state = (i: number): [number, number] => [[5, 3, 9, 7][i]!, [1, 2, 3, 4][i]!];
    picksWithAnswers(s, 200, state);
    const picks = picksWithAnswers(s, 400, state);
    const counts = tally(picks);
    // Endpoint 1 (3 in flight) leads; 2 (9) only once the others are used up past 9.
    expect(counts.get(s.keys[1]!)! > (counts.get(s.keys[0]!) ?? 0)).toBe(true);
    expect(counts.get(s.keys[2]!) ?? 0).toBeLessThan(counts.get(s.keys[1]!)!);
  });

  it('uses an answer at most maxProbeUses times, then falls back to least-request on its own in-flight', () => {
    const s = setup(3, { probesPerRequest: 0.01, maxProbeUses: 5 });
    // Give endpoint 0 many of this balancer's own requests: least-request avoids it.
    for (let k = 0; k < 50; k++) s.b.picker.endpoints[0]!.load.start();
    // Probes say endpoint 0 is idle and fast: prequal sends there while answers last.
    const state = (i: number): [number, number] => (i === 0 ? [0, 1] : [5, 50]);
    const picks: string[] = [];
    for (let i = 0; i < 3000; i++) {
      s.prober.answer(s.keys, state);
      picks.push(...pickKeys(s.b, 1));
    }
    const toZero = tally(picks).get(s.keys[0]!) ?? 0;
    // 30 probes, each answer (of endpoint 0, a third of them) good for at most 5 picks.
    expect(toZero).toBeGreaterThan(0);
    expect(toZero).toBeLessThanOrEqual(Math.ceil(30 / 3 + 5) * 5);
  });

  it('ignores answers older than maxProbeAgeMs (counted from the newest answer)', () => {
    const s = setup(3, { probesPerRequest: 1, maxProbeAgeMs: 100, maxProbeUses: 1000 });
    for (let k = 0; k < 20; k++) s.b.picker.endpoints[1]!.load.start();
    // Endpoint 1 once answered "idle and fast"; 200 ms later only 0 and 2 answer ("busy").
    picksWithAnswers(s, 30, (i) => (i === 1 ? [0, 1] : [9, 90]));
    s.clock.advance(200);
    const later: string[] = [];
    for (let i = 0; i < 50; i++) {
      const answered = s.prober.queued.splice(0).filter((t) => t.endpoint.key !== s.keys[1]);
      for (const t of answered) t.load.probed(9, 90);
      s.clock.advance(1);
      later.push(...pickKeys(s.b, 1));
    }
    // Its old answer would make it the pick (cold, fastest); expired, it is not even the fallback's.
    expect(later).not.toContain(s.keys[1]);
  });

  it('reads in-flight from load reports on responses (piggybacked) as fresh answers', () => {
    const s = setup(8, { probesPerRequest: 0.02, maxProbeUses: 1000 });
    // Probes are never answered; each response carries a report of the server's in-flight:
    // this balancer's requests there, plus 40 from others on endpoint 7. Once reports flow,
    // endpoint 7 is hot and gets (almost) nothing; the rest spreads over cold endpoints (the
    // ~4 requests this balancer has in flight at a time, one per endpoint).
    const picks = picksWithReports(s, 4000, 7);
    const late = tally(picks.slice(2000));
    expect((late.get(s.keys[7]!) ?? 0) / 2000).toBeLessThan(0.03);
    expect(late.size).toBeGreaterThanOrEqual(4);
    for (const n of late.values()) expect(n / 2000).toBeLessThan(0.3);
  });

  it('fills its pool from the endpoints its requests go to, so reports steer picks before probes reach them all', () => {
    // One probe per 100 picks: on probes alone the pool would hold one endpoint for the first
    // 100 picks, too few to compare, and the picks would be least-request's on this balancer's
    // own counts — a quarter to endpoint 3, which reports 40 in flight from other clients.
    // Each endpoint a request goes to joins the pool while it has room; its response's report
    // answers for it, so endpoint 3 is hot from its first report on.
    const s = setup(4, { probesPerRequest: 0.01, maxProbeUses: 1000 });
    const picks = picksWithReports(s, 100, 3, 4);
    expect(s.prober.sent).toBe(1);
    const late = tally(picks.slice(20));
    expect(late.get(s.keys[3]!) ?? 0).toBeLessThanOrEqual(2);
    expect(late.size).toBe(3);
  });

  it('avoids an endpoint that pushes back even when its answers look best', () => {
    const s = setup(4, { probesPerRequest: 0.5, maxProbeUses: 4 });
    const state = (i: number): [number, number] => (i === 0 ? [0, 1] : [1, 10]);
    picksWithAnswers(s, 500, state);
    const before = tally(picksWithAnswers(s, 1000, state)).get(s.keys[0]!) ?? 0;
    s.b.picker.endpoints[0]!.load.pushback();
    const during = tally(picksWithAnswers(s, 1000, state)).get(s.keys[0]!) ?? 0;
    expect(during).toBeLessThan(before / 3);
  });

  it.each([
    { answersPerPick: 1.04, expected: 2 },
    { answersPerPick: 0.9, expected: 2 },
    { answersPerPick: 0.5, expected: 4 },
    { answersPerPick: 0.04, expected: 50 },
    { answersPerPick: 0, expected: 100_000 },
  ])('reuse budget at $answersPerPick answers per pick is $expected', ({ answersPerPick, expected }) => {
    expect(reuseBudget(answersPerPick)).toBe(expected);
  });

  it.each([
    { probesPerRequest: 0.04, expected: 50 },
    { probesPerRequest: 0.5, expected: 4 },
    { probesPerRequest: 3, expected: 1 },
    { probesPerRequest: 0, expected: 1 },
    { probesPerRequest: 0.04, maxProbeUses: 7, expected: 7 },
  ])('reuse budget for $probesPerRequest probes per request is $expected', ({ expected, ...options }) => {
    expect(probeUses(prequalPolicy.parseOptions(options))).toBe(expected);
  });

  it.each([
    { options: { coldQuantile: 1.5 }, message: 'option "coldQuantile" must be a finite number >= 0 <= 1' },
    { options: { poolSize: 0 }, message: 'option "poolSize" must be an integer between 1 and 256' },
    {
      options: { probesPerRequest: -0.1 },
      message: 'option "probesPerRequest" must be a finite number >= 0 <= 16',
    },
  ])('rejects $options naming the field', ({ options, message }) => {
    expect(() => prequalPolicy.parseOptions(options)).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_OPTION,
        message: expect.stringContaining(`prequal policy: ${message}`),
      }),
    );
  });

  it('allocates nothing per pick with a prober and answers flowing (1,000 endpoints)', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    // Answers at once, into the load records: no queue, so nothing is kept per probe.
    const random = new SeededRandom(3);
    const prober: LoadProber = { probe: (t) => t.load.probed(random.int(8), 1 + random.int(20)) };
    const clock = new ManualClock();
    const b = new Balancer({ policy: 'prequal', clock, random: new SeededRandom(1), prober });
    b.update(EndpointSet.from(endpointInputs(1000)));
    const picker = b.picker;
    const run = (count: number): void => {
      for (let i = 0; i < count; i++) picker.pick();
    };
    run(200_000);
    let least = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 4; round++) {
      gc();
      const before = process.memoryUsage().heapUsed;
      run(400_000);
      least = Math.min(least, (process.memoryUsage().heapUsed - before) / 400_000);
    }
    expect(least).toBeLessThan(2);
  });
});

describe('RifQuantile', () => {
  it.each([
    { q: 0.84, values: [1, 1, 1, 1, 1, 1, 1, 8], expected: 1 },
    { q: 0.84, values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], expected: 9 },
    { q: 0.5, values: [5, 1, 4, 2, 3], expected: 3 },
    { q: 1, values: [5, 1, 4], expected: 5 },
    { q: 0, values: [5, 1, 4], expected: 1 },
  ])('the $q quantile of $values is $expected (nearest rank)', ({ q, values, expected }) => {
    const r = new RifQuantile(q, 64, 1);
    expect(r.threshold).toBe(Number.POSITIVE_INFINITY);
    for (const v of values) r.add(v);
    expect(r.threshold).toBe(expected);
  });

  it('keeps the latest values only', () => {
    const r = new RifQuantile(0.5, 4, 1);
    for (const v of [100, 100, 100, 100, 1, 2, 3, 4]) r.add(v);
    expect(r.threshold).toBe(2);
  });
});
