import { describe, expect, it } from 'vitest';
import { parseDurationMs } from '../cli/demo.js';
import { parseDemoOptions } from './demo-options.js';
import { renderHtmlReport } from './html-report.js';
import { windowImbalance, windowShares } from './phase-result.js';
import { PHASES } from './phases.js';
import { renderPhase, renderSummary } from './text-report.js';

describe('phase windows', () => {
  const from = new Map([
    ['a', 100],
    ['b', 50],
  ]);
  const to = new Map([
    ['a', 400],
    ['b', 150],
    ['c', 100],
  ]);

  it.each([
    { pods: ['a', 'b'], shares: [0.75, 0.25] },
    { pods: ['a', 'b', 'c'], shares: [0.6, 0.2, 0.2] },
    { pods: ['x'], shares: [0] },
  ])('shares of $pods', ({ pods, shares }) => {
    const got = windowShares(from, to, pods);
    pods.forEach((p, i) => {
      expect(got.get(p)).toBeCloseTo(shares[i] ?? Number.NaN, 9);
    });
  });

  it('imbalance counts only what each pod served inside the window', () => {
    const i = windowImbalance(from, to, ['a', 'b']);
    expect(i.total).toBe(400);
    expect(i.maxOverMean).toBeCloseTo(1.5, 9);
  });
});

describe('demo options', () => {
  it('defaults finish five phases of 11 s', () => {
    const o = parseDemoOptions({});
    expect(o).toMatchObject({
      pods: 4,
      clients: 20,
      ratePerClient: 80,
      durationMs: 11_000,
      phases: ['pinned', 'client', 'proxy', 'recycler', 'sidecar'],
    });
  });

  it.each([
    [{ pods: 1 }, /"pods" must be an integer between 2 and 50/],
    [{ phases: ['pinned', 'nope'] }, /"phases" must be a non-empty list/],
    [{ dataplane: 'ipvs' }, /"dataplane" must be one of "loopback", "netfilter"/],
    [{ colour: true }, /unknown option "colour"/],
  ])('rejects %o', (input, message) => {
    expect(() => parseDemoOptions(input)).toThrow(message);
  });

  it.each([
    ['12', 12_000],
    ['12s', 12_000],
    ['800ms', 800],
    ['1.5m', 90_000],
  ])('duration %s = %d ms', (text, ms) => {
    expect(parseDurationMs(text)).toBe(ms);
  });

  it('rejects a malformed duration', () => {
    expect(() => parseDurationMs('soon')).toThrow(/duration/);
  });
});

describe('reports', () => {
  const failed = {
    ...PHASES.proxy,
    status: 'failed' as const,
    reason: 'evenlb proxy exited before listening:\nError: listen EADDRINUSE <127.0.2.1:80>',
  };

  it('the summary names a failed phase and why, with no figures', () => {
    const text = renderSummary([failed]);
    expect(text).toMatch(/^proxy\s+-\s+-\s+-\s+-\s+-$/m);
    expect(text).toMatch(/proxy: failed: evenlb proxy exited before listening/);
    expect(text).toContain('EADDRINUSE');
    expect(text).not.toMatch(/[0-9]\.[0-9]{2}/);
  });

  it('the phase table of a failed phase carries the reason', () => {
    expect(renderPhase(failed)).toBe(`== ${PHASES.proxy.title} ==\n  failed: ${failed.reason}`);
  });

  it('the HTML page inlines chart.js, keeps data from closing its script element, escapes the reason', () => {
    const html = renderHtmlReport({
      generatedAt: '2026-01-01T00:00:00Z',
      options: { note: '</script><b>' },
      totalMs: 1,
      phases: [failed],
    });
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).toContain('Chart');
    expect(html.match(/<\/script>/g)?.length).toBe(3);
    expect(html).toContain('<p class="failed">failed: evenlb proxy exited before listening:');
    expect(html).toContain('&#60;127.0.2.1:80&#62;');
    expect(html).not.toContain('<canvas id=');
  });
});
