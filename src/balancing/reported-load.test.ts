import { describe, expect, it } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { EndpointLoad, LoadTracker } from './endpoint-load.js';
import { ReportField } from './reported-load.js';

describe('reported load on EndpointLoad', () => {
  it('reads "none yet" (NaN, counts 0) before anything is reported', () => {
    const load = new EndpointLoad('a', new ManualClock(), { defaultRttMs: 30, decayMs: 1000 });
    for (const f of ['utilization', 'rps', 'eps', 'reportedInFlight', 'reportedAtMs', 'probeInFlight'] as const) {
      expect(load.reported(f)).toBeNaN();
    }
    expect([load.reported('reports'), load.reported('probeUses'), load.reported('pushbacks')]).toEqual([0, 0, 0]);
  });

  it('records reports field by field: a report without a field leaves it as it was', () => {
    const clock = new ManualClock(1000);
    const load = new LoadTracker(clock).get('a');
    load.report({ cpuUtilization: 0.4, rpsFractional: 100, namedMetrics: { inflight: 3, latency_ms: 7.5 } });
    clock.advance(50);
    load.report({ applicationUtilization: 0.7, eps: 2 });
    expect({
      utilization: load.reported('utilization'),
      rps: load.reported('rps'),
      eps: load.reported('eps'),
      inFlight: load.reported('reportedInFlight'),
      at: load.reported('reportedAtMs'),
      n: load.reported('reports'),
      latencyMs: load.reported('reportedLatencyMs'),
    }).toEqual({ utilization: 0.7, rps: 100, eps: 2, inFlight: 3, at: 1050, n: 2, latencyMs: 7.5 });
  });

  it('keeps the last probe answer and counts its uses from 0 again on each answer', () => {
    const clock = new ManualClock(10);
    const tracker = new LoadTracker(clock);
    const load = tracker.get('a');
    load.probed(5, 12.5);
    expect(tracker.reported.useProbe(load.index)).toBe(1);
    expect(tracker.reported.useProbe(load.index)).toBe(2);
    clock.advance(5);
    load.probed(1, 3);
    expect([load.reported('probeInFlight'), load.reported('probeLatencyMs'), load.reported('probedAtMs')]).toEqual([
      1, 3, 15,
    ]);
    expect(load.reported('probeUses')).toBe(0);
  });

  it('counts pushback with its time', () => {
    const clock = new ManualClock(7);
    const load = new LoadTracker(clock).get('a');
    load.pushback();
    clock.advance(3);
    load.pushback();
    expect([load.reported('pushbackAtMs'), load.reported('pushbacks')]).toEqual([10, 2]);
  });

  it("tells the tracker's pushback listeners which record pushed back, until they unsubscribe", () => {
    const tracker = new LoadTracker(new ManualClock());
    tracker.get('a');
    const b = tracker.get('b');
    const heard: number[] = [];
    const stop = tracker.onPushback((index) => heard.push(index));
    b.pushback();
    stop();
    b.pushback();
    expect(heard).toEqual([b.index]);
    expect(b.reported('pushbacks')).toBe(2);
  });

  it('survives growth, moves with a pruned record, and a reused index starts as "none yet"', () => {
    const clock = new ManualClock();
    const tracker = new LoadTracker(clock);
    const a = tracker.get('a');
    a.report({ cpuUtilization: 0.5 });
    // Grow past the initial capacity: a's row is kept, new rows read "none yet".
    const others = Array.from({ length: 20 }, (_, i) => tracker.get(`e${i}`));
    expect(a.reported('utilization')).toBe(0.5);
    expect(others[19]?.reported('utilization')).toBeNaN();
    // Prune a: its handle keeps its figures in a tracker of its own; its index is reused clean.
    const index = a.index;
    tracker.prune(new Set(others.map((o) => o.key)));
    expect(a.reported('utilization')).toBe(0.5);
    const b = tracker.get('b');
    expect(b.index).toBe(index);
    expect(b.reported('utilization')).toBeNaN();
    expect(b.reported('reports')).toBe(0);
  });

  it('index reads through the tracker agree with the handle', () => {
    const tracker = new LoadTracker(new ManualClock(3));
    const load = tracker.get('x');
    expect(tracker.reportedField(load.index, ReportField.probeLatencyMs)).toBeNaN();
    load.probed(2, 40);
    expect(tracker.reportedField(load.index, ReportField.probeLatencyMs)).toBe(40);
    expect(tracker.reported.field(load.index, ReportField.probeInFlight)).toBe(2);
  });
});
