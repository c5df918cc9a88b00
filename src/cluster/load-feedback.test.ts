import { describe, expect, it } from 'vitest';
import { LoadTracker } from '../balancing/endpoint-load.js';
import { ManualClock } from '../core/clock.js';
import { applyResponse, grpcAttemptResponse, headerValue, httpAttemptResponse, isPushback } from './load-feedback.js';

const REPORT = 'TEXT application_utilization=0.5, rps_fractional=10';

describe('load feedback', () => {
  it.each([
    [{ status: 429 }, true],
    [{ status: 503 }, true],
    [{ status: 500 }, false],
    [{ status: 200 }, false],
    [{ grpcStatus: 8 }, true],
    [{ grpcStatus: 14 }, false],
    [{}, false],
  ])('isPushback(%o) is %s', (response, expected) => {
    expect(isPushback(response)).toBe(expected);
  });

  it('applies pushback always, and the report only when the policy reads reports', () => {
    const clock = new ManualClock(1_000);
    const load = new LoadTracker(clock).get('10.0.0.1:80');
    expect(applyResponse(load, { status: 429, loadReport: REPORT }, false, clock.now())).toEqual({
      pushback: true,
      report: 'none',
    });
    expect(load.reported('pushbacks')).toBe(1);
    expect(Number.isNaN(load.reported('utilization'))).toBe(true);
    expect(applyResponse(load, { status: 200, loadReport: REPORT }, true, clock.now())).toEqual({
      pushback: false,
      report: 'recorded',
    });
    expect(load.reported('utilization')).toBe(0.5);
    expect(applyResponse(load, { status: 200, loadReport: 'TEXT nonsense' }, true, clock.now()).report).toBe('ignored');
    expect(applyResponse(load, { status: 200 }, true, clock.now()).report).toBe('none');
  });

  it('reads a header from an object, a flat array of strings or Buffers, in any case', () => {
    expect(headerValue({ 'endpoint-load-metrics': REPORT }, 'endpoint-load-metrics')).toBe(REPORT);
    expect(headerValue({ 'endpoint-load-metrics': [REPORT, 'x'] }, 'endpoint-load-metrics')).toBe(REPORT);
    expect(headerValue(['Content-Type', 'text/plain', 'Endpoint-Load-Metrics', REPORT], 'endpoint-load-metrics')).toBe(
      REPORT,
    );
    expect(headerValue([Buffer.from('endpoint-load-metrics'), Buffer.from(REPORT)], 'endpoint-load-metrics')).toBe(
      REPORT,
    );
    expect(headerValue(['a', 'b'], 'endpoint-load-metrics')).toBeUndefined();
    expect(headerValue(null, 'endpoint-load-metrics')).toBeUndefined();
  });

  it('transports take the report only when the cluster reads reports', () => {
    const headers = { 'endpoint-load-metrics': REPORT };
    expect(httpAttemptResponse(200, headers, false)).toEqual({ status: 200 });
    expect(httpAttemptResponse(200, headers, true)).toEqual({ status: 200, loadReport: REPORT });
    const metadata = { get: (key: string) => (key === 'endpoint-load-metrics' ? [REPORT] : []) };
    expect(grpcAttemptResponse(8, metadata, false)).toEqual({ grpcStatus: 8 });
    expect(grpcAttemptResponse(0, metadata, true)).toEqual({ grpcStatus: 0, loadReport: REPORT });
    expect(grpcAttemptResponse(0, { get: () => [] }, true)).toEqual({ grpcStatus: 0, loadReport: undefined });
  });
});
