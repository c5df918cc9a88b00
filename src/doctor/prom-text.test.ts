import { describe, expect, it } from 'vitest';
import { PromTextError, parsePromText, sumSamples } from './prom-text.js';

describe('parsePromText', () => {
  it('reads what prom-client writes: HELP/TYPE, labels with escapes, special values, timestamps', () => {
    const body = [
      '# HELP http_requests_total Requests "served".',
      '# TYPE http_requests_total counter',
      'http_requests_total{code="200",path="/a\\"b\\\\c\\nd"} 1027 1700000000000',
      'http_requests_total{code="500"} 3',
      'up 1',
      'temp{a="x",} -1.5e3',
      'weird NaN',
      'big +Inf',
      '',
    ].join('\n');
    const samples = parsePromText(body);
    expect(samples).toHaveLength(6);
    expect(samples[0]).toEqual({
      name: 'http_requests_total',
      labels: { code: '200', path: '/a"b\\c\nd' },
      value: 1027,
    });
    expect(samples[3]?.value).toBe(-1500);
    expect(Number.isNaN(samples[4]?.value)).toBe(true);
    expect(samples[5]?.value).toBe(Number.POSITIVE_INFINITY);
    expect(sumSamples(samples, 'http_requests_total')).toBe(1030);
    expect(sumSamples(samples, 'absent')).toBeUndefined();
    expect(sumSamples(samples, 'big')).toBeUndefined();
  });

  const bad: [string, RegExp][] = [
    ['<html><body>login</body></html>', /line 1: expected a metric name/],
    ['x{a="1"', /line 1: expected a closing quote|line 1: expected "," or "}"/],
    ['x{a=1} 2', /expected an opening quote/],
    ['x{a="1",a="2"} 2', /no duplicate label "a"/],
    ['ok 1\nx 12abc', /line 2: expected a sample value/],
    ['x 1 2 3', /followed by a value and an optional timestamp/],
    ['x', /followed by a value/],
    ['x 1 1.5', /integer timestamp/],
    ['# TYPE x countr', /unknown metric type "countr"/],
    ['x{a="\\t"} 1', /an escape/],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text)} naming the line and what was expected`, () => {
      expect(() => parsePromText(text)).toThrow(PromTextError);
      expect(() => parsePromText(text)).toThrow(message);
    });
  }
});
