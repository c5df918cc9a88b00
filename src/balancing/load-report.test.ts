import { describe, expect, it } from 'vitest';
import {
  formatLoadReport,
  type LoadReport,
  MAX_LOAD_REPORT_BYTES,
  MAX_NAMED_METRICS,
  parseLoadReport,
  reportedUtilization,
} from './load-report.js';

describe('parseLoadReport', () => {
  const cases: Array<{ name: string; header: string | undefined; want: LoadReport | undefined }> = [
    {
      name: 'TEXT with every field and a named metric',
      header:
        'TEXT cpu_utilization=0.3, mem_utilization=0.5, application_utilization=0.7, rps_fractional=10.5, eps=1, named_metrics.inflight=4',
      want: {
        cpuUtilization: 0.3,
        memUtilization: 0.5,
        applicationUtilization: 0.7,
        rpsFractional: 10.5,
        eps: 1,
        namedMetrics: { inflight: 4 },
      },
    },
    { name: 'TEXT without spaces', header: 'TEXT cpu_utilization=1.5,eps=0', want: { cpuUtilization: 1.5, eps: 0 } },
    { name: 'TEXT skips unknown keys', header: 'TEXT foo=1, rps_fractional=2', want: { rpsFractional: 2 } },
    {
      name: 'TEXT drops negative, non-numeric and empty values',
      header:
        'TEXT cpu_utilization=-1, eps=abc, rps_fractional=, mem_utilization=Infinity, application_utilization=0.2',
      want: { applicationUtilization: 0.2 },
    },
    {
      name: 'JSON with proto field names',
      header: 'JSON {"cpu_utilization":0.25,"named_metrics":{"inflight":2,"queue":7}}',
      want: { cpuUtilization: 0.25, namedMetrics: { inflight: 2, queue: 7 } },
    },
    {
      name: 'JSON with camelCase names',
      header: 'JSON {"applicationUtilization":0.9,"rpsFractional":3,"namedMetrics":{"inflight":1}}',
      want: { applicationUtilization: 0.9, rpsFractional: 3, namedMetrics: { inflight: 1 } },
    },
    { name: 'JSON that is not an object', header: 'JSON [1,2]', want: undefined },
    { name: 'JSON that does not parse', header: 'JSON {"cpu_utilization":', want: undefined },
    { name: 'binary form (not read)', header: 'BIN CgQIARAB', want: undefined },
    { name: 'no format prefix', header: 'cpu_utilization=0.3', want: undefined },
    { name: 'nothing usable', header: 'TEXT foo=bar', want: undefined },
    { name: 'absent', header: undefined, want: undefined },
    {
      name: 'a named metric with separators in its name is dropped',
      header: 'TEXT named_metrics.a b=1, named_metrics.ok=2',
      want: { namedMetrics: { ok: 2 } },
    },
  ];

  it.each(cases)('$name', ({ header, want }) => {
    expect(parseLoadReport(header)).toEqual(want);
  });

  it('returns frozen reports', () => {
    const r = parseLoadReport('TEXT eps=1, named_metrics.x=1') as LoadReport;
    expect(Object.isFrozen(r)).toBe(true);
    expect(Object.isFrozen(r.namedMetrics)).toBe(true);
  });

  it('keeps at most MAX_NAMED_METRICS named metrics from a hostile server', () => {
    const many = Array.from({ length: 60 }, (_, i) => `named_metrics.m${i}=${i}`).join(',');
    const r = parseLoadReport(`TEXT ${many}`) as LoadReport;
    expect(Object.keys(r.namedMetrics ?? {})).toHaveLength(MAX_NAMED_METRICS);
  });

  it('ignores a header longer than MAX_LOAD_REPORT_BYTES whole', () => {
    const long = `TEXT eps=1, ${'x'.repeat(MAX_LOAD_REPORT_BYTES)}=1`;
    expect(parseLoadReport(long)).toBeUndefined();
  });
});

describe('formatLoadReport', () => {
  it('writes the TEXT form that parseLoadReport reads back', () => {
    const report: LoadReport = {
      cpuUtilization: 0.123456789,
      applicationUtilization: 0.5,
      rpsFractional: 120,
      eps: 0,
      namedMetrics: { inflight: 3 },
    };
    const text = formatLoadReport(report);
    expect(text).toBe(
      'TEXT cpu_utilization=0.123457, application_utilization=0.5, rps_fractional=120, eps=0, named_metrics.inflight=3',
    );
    expect(parseLoadReport(text)).toEqual({ ...report, cpuUtilization: 0.123457 });
  });

  it('leaves out values that are not finite non-negative numbers', () => {
    expect(formatLoadReport({ cpuUtilization: Number.NaN, eps: -1, rpsFractional: 2 })).toBe('TEXT rps_fractional=2');
  });
});

describe('reportedUtilization', () => {
  it.each([
    { report: { applicationUtilization: 0.6, cpuUtilization: 0.2 }, want: 0.6 },
    { report: { applicationUtilization: 0, cpuUtilization: 0.2 }, want: 0.2 },
    { report: { cpuUtilization: 1.4 }, want: 1.4 },
    { report: { rpsFractional: 10 }, want: undefined },
  ])('$report → $want', ({ report, want }) => {
    expect(reportedUtilization(report)).toBe(want);
  });
});
