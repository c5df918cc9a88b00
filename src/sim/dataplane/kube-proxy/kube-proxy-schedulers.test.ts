import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../../core/random.js';
import { SimClient } from '../../model/sim-client.js';
import { SimPod } from '../../model/sim-pod.js';
import { IptablesScheduler, NftablesScheduler } from './iptables-scheduler.js';
import { IpvsScheduler } from './ipvs-scheduler.js';

const pods = (n: number, from = 0): SimPod[] =>
  Array.from(
    { length: n },
    (_, i) =>
      new SimPod({
        index: from + i,
        name: `p${from + i}`,
        addressU32: 0x0a400000 + from + i,
        port: 80,
        revision: 1,
        speed: 1,
        workers: 1,
        createdAtMs: 0,
        initial: true,
      }),
  );
const client = (index: number, node: number, address = 0x0a800000 + index) => new SimClient(index, node, address, 1, 1);

describe('IptablesScheduler and NftablesScheduler', () => {
  for (const [name, make] of [
    ['iptables', (r: SeededRandom) => new IptablesScheduler(r)],
    ['nftables', (r: SeededRandom) => new NftablesScheduler(r)],
  ] as const) {
    it(`${name}: every endpoint gets 1/N of new connections (within 2%)`, () => {
      const s = make(new SeededRandom(1));
      const list = pods(5);
      s.update(list);
      const counts = new Map<SimPod, number>();
      const n = 100_000;
      for (let i = 0; i < n; i++) {
        const p = s.pick() as SimPod;
        counts.set(p, (counts.get(p) ?? 0) + 1);
      }
      for (const p of list) expect(Math.abs((counts.get(p) ?? 0) / (n / 5) - 1)).toBeLessThan(0.02);
    });
  }

  it('returns undefined without endpoints', () => {
    const s = new IptablesScheduler(new SeededRandom(1));
    s.update([]);
    expect(s.pick()).toBeUndefined();
  });
});

describe('IpvsScheduler', () => {
  it('rr rotates from the head, separately on each node', () => {
    const s = new IpvsScheduler('rr', 2);
    const list = pods(3);
    s.update(list);
    const a = client(0, 0);
    const b = client(1, 1);
    const seq = [s.pick(a), s.pick(a), s.pick(b), s.pick(a), s.pick(b)].map((p) => p?.name);
    expect(seq).toEqual(['p0', 'p1', 'p0', 'p2', 'p1']);
  });

  it('rr continues after a removed destination and appends new ones', () => {
    const s = new IpvsScheduler('rr', 1);
    const [p0, p1, p2] = pods(3) as [SimPod, SimPod, SimPod];
    s.update([p0, p1, p2]);
    const c = client(0, 0);
    expect(s.pick(c)).toBe(p0);
    expect(s.pick(c)).toBe(p1);
    const [p3] = pods(1, 3) as [SimPod];
    // p1 (picked last) leaves; p3 joins at the end: next is p2, then p3, then p0.
    s.update([p0, p2, p3]);
    expect([s.pick(c), s.pick(c), s.pick(c)]).toEqual([p2, p3, p0]);
  });

  it('lc counts only its own node’s connections', () => {
    const s = new IpvsScheduler('lc', 2);
    const [p0, p1] = pods(2) as [SimPod, SimPod];
    s.update([p0, p1]);
    const a = client(0, 0);
    const b = client(1, 1);
    expect(s.pick(a)).toBe(p0);
    s.opened(a, p0);
    expect(s.pick(a)).toBe(p1);
    s.opened(a, p1);
    s.opened(a, p1);
    expect(s.pick(a)).toBe(p0);
    // Node 1 has seen nothing: it picks the first destination, although node 0 loads it.
    expect(s.pick(b)).toBe(p0);
    s.closed(a, p1);
    s.closed(a, p1);
    expect(s.pick(a)).toBe(p1);
  });

  it('sh sends a client to the same pod until the destinations change', () => {
    const s = new IpvsScheduler('sh', 3);
    const list = pods(4);
    s.update(list);
    const seen = new Map<number, SimPod | undefined>();
    const r = new SeededRandom(2);
    for (let i = 0; i < 200; i++) {
      const c = client(i, i % 3, (0x0a800000 + r.int(65536)) >>> 0);
      const first = s.pick(c);
      expect(s.pick(c)).toBe(first);
      seen.set(i, first);
    }
    // Hashing spreads 200 addresses over all 4 destinations.
    expect(new Set(seen.values()).size).toBe(4);
  });
});
