import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../core/random.js';
import { FairShareDecider, nextFairSharePeriodMs } from './fair-share-decider.js';
import { parseFairShareDecision } from './fair-share-options.js';
import { PeerLoadTable } from './peer-load-table.js';

const options = parseFairShareDecision('test', { windowMs: 1000, periodMs: 500 });
const ready = (): FairShareDecider => new FairShareDecider(options, -10_000);

describe('FairShareDecider', () => {
  const cases = [
    { name: 'no peer answer holds', own: 600, peers: [], expect: 'no-peers' },
    { name: 'at the mean holds', own: 300, peers: [300, 300, 300], expect: 'within-share' },
    { name: 'below the mean holds', own: 100, peers: [600, 300, 200], expect: 'within-share' },
    { name: 'within tolerance holds', own: 320, peers: [300, 290, 290], expect: 'within-share' },
  ] as const;
  for (const c of cases) {
    it(c.name, () => {
      const d = ready().decide({ nowMs: 0, ownLoad: c.own, peerLoads: c.peers, connectionLoads: [100, 100, 100] });
      expect(d.type).toBe('hold');
      expect(d.type === 'hold' && d.reason).toBe(c.expect);
    });
  }

  it('sheds the heaviest connections that bring it toward the mean, within the churn budget', () => {
    // 6/3/2/1 connections of 50 req/s: mean 150, excess 150 on the first pod.
    const loads = [50, 50, 50, 50, 50, 50];
    const d = ready().decide({ nowMs: 0, ownLoad: 300, peerLoads: [150, 100, 50], connectionLoads: loads });
    expect(d.type).toBe('shed');
    // 25% of 6 connections = 1 per period.
    expect(d.type === 'shed' && d.connections).toEqual([0]);
    const big = new FairShareDecider(parseFairShareDecision('test', { maxShedFraction: 1 }), -1e9);
    // No peer below the mean by more than the tolerance (mean 325, floor 292.5): excess 75.
    const all = big.decide({ nowMs: 0, ownLoad: 400, peerLoads: [300, 300, 300], connectionLoads: [10, 60, 50, 40] });
    // 60 (left 15), 50 ≥ 2×15 skipped, 40 skipped, 10 < 30 taken.
    expect(all.type === 'shed' && all.connections).toEqual([1, 0]);
  });

  it('fills a peer far below the mean: sheds above the mean within tolerance, up to twice the excess', () => {
    const d = new FairShareDecider(parseFairShareDecision('test', { maxShedFraction: 1 }), -1e9);
    // 5 + 5 + 5 + 5 + 0 connections of 1: mean 4, own share 1.25, a peer at 0.
    const filled = d.decide({ nowMs: 0, ownLoad: 5, peerLoads: [5, 5, 5, 0], connectionLoads: [1, 1, 1, 1, 1] });
    // Twice the excess: 5 → 3, as far below the mean as it was above, no farther.
    expect(filled).toMatchObject({ type: 'shed', connections: [0, 1] });
    // Within tolerance (share 1.05 < 1.1) but a peer far below (2 < 0.9 × 4.2): still sheds; 5 → 4.
    const near = new FairShareDecider(parseFairShareDecision('test', { maxShedFraction: 1 }), -1e9);
    const d2 = near.decide({ nowMs: 0, ownLoad: 5, peerLoads: [5, 5, 4, 2], connectionLoads: [1, 1, 1, 1, 1] });
    expect(d2).toMatchObject({ type: 'shed', connections: [0] });
  });

  it('does not fill from at or below the mean, nor when the excess is less than half a connection', () => {
    const d = ready();
    // At the mean with a peer far below: holds.
    expect(d.decide({ nowMs: 0, ownLoad: 4, peerLoads: [4, 6, 2], connectionLoads: [1, 1, 1, 1] })).toMatchObject({
      type: 'hold',
      reason: 'within-share',
    });
    // Excess 0.2 of a connection: closing one would end farther from the mean.
    expect(d.decide({ nowMs: 0, ownLoad: 4, peerLoads: [4, 4, 3.2], connectionLoads: [1, 1, 1, 1] })).toMatchObject({
      type: 'hold',
      reason: 'no-fit',
    });
  });

  it('does not close a connection heavier than twice the excess (it would only move the imbalance)', () => {
    const d = ready().decide({ nowMs: 0, ownLoad: 200, peerLoads: [150, 150, 100], connectionLoads: [200] });
    expect(d.type === 'hold' && d.reason).toBe('no-fit');
  });

  it('never sheds during warm-up, and waits a cooldown after shedding', () => {
    const d = new FairShareDecider(options, 0);
    const input = { ownLoad: 400, peerLoads: [100, 100, 100], connectionLoads: [100, 100, 100, 100] };
    expect(d.decide({ ...input, nowMs: options.warmupMs - 1 })).toMatchObject({ type: 'hold', reason: 'warm-up' });
    expect(d.decide({ ...input, nowMs: options.warmupMs }).type).toBe('shed');
    expect(d.decide({ ...input, nowMs: options.warmupMs + 1 })).toMatchObject({ type: 'hold', reason: 'cooldown' });
    expect(d.decide({ ...input, nowMs: options.warmupMs + options.cooldownMs }).type).toBe('shed');
  });

  it('takes shed load off its measured load until the window has seen it (short cooldowns do not shed twice)', () => {
    const d = new FairShareDecider(parseFairShareDecision('test', { windowMs: 1000, cooldownMs: 100 }), -1e9);
    const input = { ownLoad: 400, peerLoads: [300, 300, 300], connectionLoads: [100, 100, 100, 100] };
    expect(d.decide({ ...input, nowMs: 0 })).toMatchObject({ type: 'shed', connections: [0] });
    // The window still shows 400: 300 once the shed connection is taken off: at the mean.
    expect(d.decide({ ...input, nowMs: 200 })).toMatchObject({ type: 'hold', reason: 'within-share' });
    // The window has moved on and still shows 400 (the client came back): shed again.
    expect(d.decide({ ...input, nowMs: 1100 }).type).toBe('shed');
  });

  it('regression: the connections load is not reduced a second time by its own sheds (it counts only open, non-retiring connections)', () => {
    // Before, each shed was also taken off the measured count for a whole window: a pod back at
    // 5 of mean 4 after its re-dials returned looked like 3 and held, so a new pod filled slowly.
    const o = parseFairShareDecision('test', {
      loadMetric: 'connections',
      windowMs: 300,
      cooldownMs: 100,
      maxShedFraction: 0.5,
    });
    const d = new FairShareDecider(o, -1e9);
    const input = { ownLoad: 5, peerLoads: [5, 5, 5, 0], connectionLoads: [1, 1, 1, 1, 1] };
    expect(d.decide({ ...input, nowMs: 0 })).toMatchObject({ type: 'shed', connections: [0, 1] });
    // 100 ms later both re-dials came back to this pod (5 again), the new one still at 0: shed again.
    expect(d.decide({ ...input, nowMs: 100 })).toMatchObject({ type: 'shed', connections: [0, 1] });
    // A pod now at the mean holds.
    expect(
      d.decide({ ...input, ownLoad: 4, peerLoads: [5, 5, 4, 2], connectionLoads: [1, 1, 1, 1], nowMs: 200 }),
    ).toMatchObject({ type: 'hold', reason: 'within-share' });
  });

  it('has hysteresis: starts above 1 + tolerance, stops at 1 + tolerance × stopFraction', () => {
    const d = new FairShareDecider(parseFairShareDecision('test', { cooldownMs: 0, windowMs: 10 }), -1e9);
    let now = 0;
    const at = (own: number) => {
      now += 100;
      return d.decide({
        nowMs: now,
        ownLoad: own,
        peerLoads: [100, 100, 100],
        connectionLoads: [1, 1, 1, 1, 1, 1, 1, 1],
      });
    };
    expect(at(107).type).toBe('hold'); // share 1.05: not started
    expect(at(115).type).toBe('shed'); // 1.11 > 1.10: starts
    expect(at(107).type).toBe('shed'); // 1.05 > 1.05? share = 107/101.75 = 1.0516: continues
    expect(at(104).type).toBe('hold'); // 1.03 ≤ 1.05: stops
    expect(at(107).type).toBe('hold');
  });

  it('jitters the period within ±jitter', () => {
    const r = new SeededRandom(3);
    for (let i = 0; i < 100; i++) {
      const ms = nextFairSharePeriodMs(options, r);
      expect(ms).toBeGreaterThanOrEqual(options.periodMs * 0.8);
      expect(ms).toBeLessThanOrEqual(options.periodMs * 1.2);
    }
  });

  it('rejects bad options naming the field', () => {
    expect(() => parseFairShareDecision('recycleConnections', { tolerance: -1 })).toThrow(/tolerance/);
    expect(() => parseFairShareDecision('recycleConnections', { tolerence: 0.1 })).toThrow(
      /unknown option "tolerence"/,
    );
  });
});

describe('PeerLoadTable', () => {
  it('asks a bounded number of distinct peers per period, whatever the fleet size', () => {
    const t = new PeerLoadTable({ peersPerPeriod: 3, peerTtlMs: 1000 }, new SeededRandom(1));
    t.setPeers(Array.from({ length: 1000 }, (_, i) => `p${i}`));
    for (let i = 0; i < 50; i++) {
      const picked = t.pickPeers();
      expect(picked).toHaveLength(3);
      expect(new Set(picked).size).toBe(3);
    }
    t.setPeers(['a', 'b']);
    expect(t.pickPeers().sort()).toEqual(['a', 'b']);
  });

  it('keeps answers for peerTtlMs and forgets departed peers', () => {
    const t = new PeerLoadTable({ peersPerPeriod: 3, peerTtlMs: 1000 }, new SeededRandom(1));
    t.setPeers(['a', 'b', 'c']);
    t.record('a', 10, 0);
    t.record('b', 20, 500);
    t.record('zzz', 99, 500);
    expect(t.freshLoads(600).sort()).toEqual([10, 20]);
    expect(t.freshLoads(1200)).toEqual([20]);
    t.setPeers(['a', 'c']);
    expect(t.freshLoads(600)).toEqual([10]);
  });
});
