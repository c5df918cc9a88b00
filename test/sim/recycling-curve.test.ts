/**
 * The balance-versus-reconnects curve in the simulator's HTML report: the scenario run with an
 * age ladder and fair-share tolerances through iptables (seed 1), its figures in the page's
 * data and drawn as a chart offline, and a clear error for a per-request dataplane.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CURVE_AGES_MS, CURVE_TOLERANCES, recyclingCurve } from '../../src/sim/report/recycling-curve.js';
import { renderHtml } from '../../src/sim/report/render-html.js';
import { launchChromium } from '../support/browser.js';
import { runBuiltin } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'evenlb-curve-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The page's inlined data. */
function pageData(html: string): { recyclingCurve: unknown } {
  const m = /<script id="sim-data" type="application\/json">(.*?)<\/script>/s.exec(html);
  if (m === null) throw new Error('no sim-data in the page');
  return JSON.parse(m[1] as string);
}

describe('the recycling curve in the HTML report', () => {
  const run = (knobs: object) => runBuiltin('steady', ['iptables'], { windowMs: 60_000, ...knobs });
  const curve = recyclingCurve(run, 'iptables');

  it('has every age and tolerance, with figures that show the trade-off', () => {
    expect(curve.dataplane).toBe('iptables');
    const ages = curve.points.filter((p) => p.recycling === 'age');
    const fair = curve.points.filter((p) => p.recycling === 'fair-share');
    expect(ages.map((p) => p.setting)).toEqual(CURVE_AGES_MS);
    expect(fair.map((p) => p.setting)).toEqual(CURVE_TOLERANCES);
    for (const p of curve.points) {
      expect(Number.isFinite(p.maxOverMean) && p.maxOverMean >= 1).toBe(true);
      expect(Number.isFinite(p.reconnectsPerMinute) && p.reconnectsPerMinute >= 0).toBe(true);
    }
    // Without recycling nothing reconnects; shorter ages reconnect more.
    expect(curve.none.reconnectsPerMinute).toBe(0);
    const rates = ages.map((p) => p.reconnectsPerMinute);
    expect(rates).toEqual([...rates].sort((a, b) => a - b));
    // Fair share at 10%: better balance than no recycling, for fewer reconnects than the 1 s age.
    const tenPercent = fair.find((p) => p.setting === 0.1);
    const oneSecond = ages.find((p) => p.setting === 1000);
    expect(tenPercent?.maxOverMean).toBeLessThan(curve.none.maxOverMean);
    expect(tenPercent?.reconnectsPerMinute).toBeLessThan((oneSecond?.reconnectsPerMinute ?? 0) / 5);
  });

  it('puts the curve in the page data, and none without it', () => {
    const report = run({});
    expect(pageData(renderHtml(report, { recyclingCurve: curve })).recyclingCurve).toEqual(curve);
    const plain = renderHtml(report);
    expect(pageData(plain).recyclingCurve).toBeNull();
  });

  it('names the problem when the dataplane balances per request', () => {
    expect(() =>
      recyclingCurve(
        (k) => runBuiltin('steady', ['evenlb:least-request'], { windowMs: 10_000, ...k }),
        'evenlb:least-request',
      ),
    ).toThrow(/balances per request.*per-connection dataplane/);
    expect(() => recyclingCurve(run, 'ipvs-rr')).toThrow(/no result for dataplane "ipvs-rr"/);
  });

  it('draws the curve offline (a scatter chart and its table)', async (ctx) => {
    const file = join(dir, 'curve.html');
    writeFileSync(file, renderHtml(run({}), { recyclingCurve: curve }));
    const browser = await launchChromium(ctx);
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`file://${file}`);
      await page.waitForFunction("Object.values(Chart.instances).some((c) => c.canvas.id === 'curve')", undefined, {
        timeout: 15_000,
      });
      const points = (await page.evaluate(
        "Object.values(Chart.instances).find((c) => c.canvas.id === 'curve').data.datasets.map((d) => d.data.length)",
      )) as number[];
      expect(errors).toEqual([]);
      expect(points).toEqual([CURVE_AGES_MS.length, CURVE_TOLERANCES.length]);
      expect(await page.locator('#curve-box tbody tr').count()).toBe(
        1 + CURVE_AGES_MS.length + CURVE_TOLERANCES.length,
      );
    } finally {
      await browser.close();
    }
  });
});
