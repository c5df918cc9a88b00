import { describe, expect, it } from 'vitest';
import { parseLoadReport } from '../../balancing/load-report.js';
import { ManualClock } from '../../core/clock.js';
import { cpuLimitCores, LATENCY_SAMPLES_PER_SECOND, LoadReporter } from './load-reporter.js';

const T0 = 1_000_000;

describe('LoadReporter', () => {
  it('reports rps and eps of the last periods, exponentially averaged over windowMs', () => {
    const clock = new ManualClock(T0);
    const reporter = new LoadReporter({ clock, cpu: false, periodMs: 100, windowMs: 100 });
    // 20 requests per 100 ms period = 200/s, a quarter of them failing.
    for (let period = 0; period < 30; period++) {
      for (let i = 0; i < 20; i++) reporter.begin().end(i % 4 === 0);
      clock.advance(100);
    }
    const report = reporter.report();
    expect(report.rpsFractional).toBeCloseTo(200, 0);
    expect(report.eps).toBeCloseTo(50, 0);
    expect(report.cpuUtilization).toBeUndefined();
    reporter.close();
  });

  it('cpu_utilization is CPU time used over the CPU the process may use', () => {
    const clock = new ManualClock(T0);
    let micros = 0;
    const reporter = new LoadReporter({
      clock,
      cpuCores: 2,
      cpuUsageMicros: () => micros,
      periodMs: 100,
      windowMs: 50,
    });
    // Half a core busy: 50 ms of CPU per 100 ms on 2 cores → 0.25.
    for (let i = 0; i < 20; i++) {
      micros += 50_000;
      clock.advance(100);
    }
    expect(reporter.report().cpuUtilization).toBeCloseTo(0.25, 2);
    reporter.close();
  });

  it('application_utilization is read once per period; invalid values are left out', () => {
    const clock = new ManualClock(T0);
    let value = 0.5;
    let reads = 0;
    const reporter = new LoadReporter({
      clock,
      cpu: false,
      periodMs: 100,
      applicationUtilization: () => {
        reads++;
        return value;
      },
    });
    expect(reporter.report().applicationUtilization).toBe(0.5);
    for (let i = 0; i < 50; i++) reporter.begin().reportValue();
    expect(reads).toBe(1);
    value = Number.NaN;
    clock.advance(100);
    expect(reporter.report().applicationUtilization).toBeUndefined();
    value = -1;
    clock.advance(100);
    expect(reporter.report().applicationUtilization).toBeUndefined();
    reporter.close();
  });

  it("a response's header counts the other requests in flight, in the TEXT form parseLoadReport reads", () => {
    const clock = new ManualClock(T0);
    const reporter = new LoadReporter({ clock, cpu: false, applicationUtilization: () => 0.25 });
    const held = [reporter.begin(), reporter.begin(), reporter.begin()];
    const value = (held[0] as ReturnType<LoadReporter['begin']>).reportValue();
    expect(value?.startsWith('TEXT ')).toBe(true);
    const report = parseLoadReport(value as string);
    expect(report?.applicationUtilization).toBe(0.25);
    expect(report?.namedMetrics?.inflight).toBe(2);
    // No request has completed: the latency is unknown, so it is left out (not 0).
    expect(report?.namedMetrics).toEqual({ inflight: 2 });
    expect((held[1] as ReturnType<LoadReporter['begin']>).reportValue()).toBe(value);
    clock.advance(7);
    (held[2] as ReturnType<LoadReporter['begin']>).end();
    const known = (held[0] as ReturnType<LoadReporter['begin']>).reportValue();
    expect(parseLoadReport(known as string)?.namedMetrics).toEqual({ inflight: 1, latency_ms: 7 });
    // The same in-flight count in the same period is the same string (built once).
    expect((held[1] as ReturnType<LoadReporter['begin']>).reportValue()).toBe(known);
    for (const r of held) r.end();
    expect(reporter.inFlight).toBe(0);
    reporter.close();
  });

  it('sampleRate spreads the reports evenly, without randomness', () => {
    const reporter = new LoadReporter({ clock: new ManualClock(T0), cpu: false, sampleRate: 0.25 });
    const carried = Array.from({ length: 40 }, () => {
      const r = reporter.begin();
      const v = r.reportValue();
      r.end();
      return v !== undefined;
    });
    expect(carried.filter(Boolean)).toHaveLength(10);
    expect(carried.slice(0, 8)).toEqual([false, false, false, true, false, false, false, true]);
    expect(reporter.stats().reportsAttached).toBe(10);
    reporter.close();
  });

  it('a probe answer counts every request in flight and the latency a newcomer can expect', () => {
    const clock = new ManualClock(T0);
    const reporter = new LoadReporter({ clock, cpu: false });
    // Before any completion the server does not know its latency: the answer leaves it out.
    const first = reporter.begin();
    expect(reporter.probeAnswer()).toEqual({ inFlight: 1 });
    clock.advance(10);
    first.end();
    // Requests arriving with 0 others take 10 ms; with 1 other, 30 ms.
    for (let i = 0; i < 10; i++) {
      const first = reporter.begin();
      const second = reporter.begin();
      clock.advance(10);
      first.end();
      clock.advance(20);
      second.end();
    }
    expect(reporter.probeAnswer()).toEqual({ inFlight: 0, latencyMs: 10 });
    const held = reporter.begin();
    expect(reporter.probeAnswer().inFlight).toBe(1);
    expect(reporter.probeAnswer().latencyMs).toBeCloseTo(30, 5);
    held.end();
    reporter.close();
  });

  it('above LATENCY_SAMPLES_PER_SECOND completions a second it times only every k-th request, still counting all', () => {
    const clock = new ManualClock(T0);
    let reads = 0;
    const counting = {
      now: () => {
        reads++;
        return clock.now();
      },
      setTimeout: (fn: () => void, ms: number) => clock.setTimeout(fn, ms),
    };
    const reporter = new LoadReporter({ clock: counting, cpu: false, periodMs: 100, windowMs: 100 });
    // 500 requests of 0.2 ms per 100 ms period: 5,000/s, five times the sampling threshold.
    const period = () => {
      for (let i = 0; i < 500; i++) {
        const r = reporter.begin();
        clock.advance(0.2);
        r.end();
      }
    };
    for (let p = 0; p < 20; p++) period();
    reads = 0;
    period();
    expect(reporter.report().rpsFractional).toBeGreaterThan(4 * LATENCY_SAMPLES_PER_SECOND);
    // Twice per timed request: about 2 × 500 / 5, well under twice per request.
    expect(reads / (2 * 500)).toBeLessThanOrEqual(0.3);
    expect(reporter.probeAnswer().latencyMs).toBeCloseTo(0.2, 5);
    expect(reporter.stats()).toMatchObject({ requests: 21 * 500, inFlight: 0 });
    reporter.close();
  });

  it('end() is counted once; close() stops recomputing', () => {
    const clock = new ManualClock(T0);
    const reporter = new LoadReporter({ clock, cpu: false, periodMs: 100, windowMs: 100 });
    const r = reporter.begin();
    r.end(true);
    r.end(true);
    expect(reporter.stats()).toMatchObject({ requests: 1, inFlight: 0 });
    reporter.close();
    reporter.close();
    const frozen = reporter.report();
    clock.advance(1_000);
    expect(reporter.report()).toBe(frozen);
  });

  it('rejects bad options naming the field', () => {
    expect(() => new LoadReporter({ sampleRate: 2 })).toThrow(/sampleRate/);
    expect(() => new LoadReporter({ periodMs: 0 })).toThrow(/periodMs/);
  });
});

describe('cpuLimitCores', () => {
  it('reads the cgroup v2 limit, then v1, at most the host', () => {
    const files = (map: Record<string, string>) => (path: string) => {
      const v = map[path];
      if (v === undefined) throw new Error('ENOENT');
      return v;
    };
    expect(cpuLimitCores(files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' }))).toBe(0.5);
    expect(
      cpuLimitCores(
        files({
          '/sys/fs/cgroup/cpu.max': 'max 100000',
          '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '150000',
          '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000',
        }),
      ),
    ).toBeLessThanOrEqual(1.5);
    expect(cpuLimitCores(files({ '/sys/fs/cgroup/cpu.max': '100000000 1000' }))).toBeLessThanOrEqual(1_000);
    expect(cpuLimitCores(files({}))).toBeGreaterThanOrEqual(1);
  });
});
