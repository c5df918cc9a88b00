import { describe, expect, it } from 'vitest';
import { type MeasuredWindow, PodLoads } from './pod-loads.js';

const open = (startMs: number, endMs = Number.POSITIVE_INFINITY): MeasuredWindow => ({ startMs, endMs });

/**
 * One pod's figures in a store shared with other pods: the pod sits at row 5 (the store grows
 * to it) beside a busy neighbour at row 4, so a figure that leaked between rows would show.
 */
function meter(workers: number, createdAtMs: number, window: MeasuredWindow, windowMs: number) {
  const loads = new PodLoads(window, windowMs, 2);
  loads.add(4, 3, createdAtMs);
  loads.add(5, workers, createdAtMs);
  loads.started(4, createdAtMs);
  loads.started(4, createdAtMs);
  return {
    started: (t: number) => loads.started(5, t),
    finished: (t: number, latencyMs: number) => loads.finished(5, t, latencyMs, 0),
    windowBusyMs: (t: number) => loads.windowBusyMs(5, t),
    recentUtilization: (t: number) => loads.recentUtilization(5, t),
    recentRequestsPerSecond: (t: number) => loads.recentRequestsPerSecond(5, t),
    get busy() {
      return loads.busy(5);
    },
  };
}

describe('PodLoads', () => {
  it('counts busy worker-time inside the measured window only', () => {
    const window = open(Number.POSITIVE_INFINITY);
    const m = meter(4, 0, window, 1000);
    m.started(0);
    m.started(0);
    // Two busy workers from 0; the window opens at 100 (a settled scenario) and closes at 300.
    window.startMs = 100;
    window.endMs = 300;
    m.finished(200, 200); // one leaves at 200
    expect(m.windowBusyMs(1000)).toBeCloseTo(2 * 100 + 1 * 100, 9);
    expect(m.busy).toBe(1);
  });

  it('recent utilization: busy workers over workers over the trailing window (1 to 1.25 windows)', () => {
    const m = meter(4, 0, open(0), 1000);
    // One of four workers busy all along: 25%, read at several moments (boundaries included).
    m.started(0);
    for (const t of [1, 250, 999, 1000, 1001, 4321]) expect(m.recentUtilization(t)).toBeCloseTo(0.25, 9);
    // Three more from 5000: the trailing window fills with 100% over about a second.
    m.started(5000);
    m.started(5000);
    m.started(5000);
    expect(m.recentUtilization(5500)).toBeGreaterThan(0.25);
    expect(m.recentUtilization(5500)).toBeLessThan(1);
    expect(m.recentUtilization(6500)).toBeCloseTo(1, 9);
    // Idle for a long stretch (many boundaries skipped at once): 0, and back to 1/4 after one busy worker.
    m.finished(7000, 1);
    m.finished(7000, 1);
    m.finished(7000, 1);
    m.finished(7000, 1);
    expect(m.recentUtilization(60_000)).toBe(0);
    m.started(60_000);
    expect(m.recentUtilization(61_500)).toBeCloseTo(0.25, 9);
  });

  it('a pod created mid-run reports over the time it has existed, not a window reaching before it', () => {
    const m = meter(2, 10_100, open(0), 1000);
    m.started(10_100);
    expect(m.recentUtilization(10_300)).toBeCloseTo(0.5, 9);
    expect(m.recentRequestsPerSecond(10_300)).toBe(0);
  });

  it('recent requests per second: completions over the trailing window', () => {
    const m = meter(8, 0, open(0), 1000);
    // 200 requests per second, each served in 5 ms, for 3 s.
    for (let t = 0; t < 3000; t += 5) {
      m.started(t);
      m.finished(t + 5, 5);
    }
    expect(m.recentRequestsPerSecond(3000) / 200).toBeGreaterThan(0.98);
    expect(m.recentRequestsPerSecond(3000) / 200).toBeLessThan(1.02);
    expect(m.recentUtilization(3000)).toBeCloseTo(1 / 8, 6);
  });

  it("estimates a request's latency at an in-flight count by evenlb/server's rule, per pod; unknown before any", () => {
    const loads = new PodLoads(open(0), 1000, 1);
    loads.add(0, 4, 0);
    loads.add(1, 4, 0);
    // Nothing yet: unknown (NaN), never 0 — a pod that served nothing must not look fastest.
    expect(loads.latencyAtInFlightMs(0, 3, 0)).toBeNaN();
    // Requests that arrived at 1 took 10 ms, at 6 (a queue of 2 behind 4 workers) 30 ms.
    for (let t = 100; t < 2000; t += 10) {
      loads.started(0, t);
      loads.finished(0, t + 5, 10, 1);
      loads.started(0, t + 5);
      loads.finished(0, t + 8, 30, 6);
    }
    expect(loads.latencyAtInFlightMs(0, 1, 2000)).toBeCloseTo(10, 9);
    expect(loads.latencyAtInFlightMs(0, 3, 2000)).toBeCloseTo(10, 9); // nearest count below with a history
    expect(loads.latencyAtInFlightMs(0, 0, 2000)).toBeCloseTo(10, 9); // none below: nearest above
    expect(loads.latencyAtInFlightMs(0, 6, 2000)).toBeCloseTo(30, 9);
    expect(loads.latencyAtInFlightMs(0, 500, 2000)).toBeCloseTo(30, 9); // 63 and above share one count
    // Each new request weighs 1/8 in its count's estimate; the other pod's row is untouched.
    loads.started(0, 3000);
    loads.finished(0, 3010, 18, 1);
    expect(loads.latencyAtInFlightMs(0, 1, 3010)).toBeCloseTo(11, 9);
    expect(loads.latencyAtInFlightMs(1, 1, 3010)).toBeNaN();
    // A pod added again at its index (a new pod) starts unknown.
    loads.add(0, 4, 4000);
    expect(loads.latencyAtInFlightMs(0, 1, 4000)).toBeNaN();
  });
});
