/**
 * `evenlb sim` as a real child process: the table, `--json` against the documented schema,
 * a self-contained `--html` page that renders in Chromium, byte-identical output for the
 * same seed, YAML scenario files, and exit code 2 with a clear message for usage errors.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredPolicies } from '../../src/balancing/policy.js';
import { simReportSchema } from '../../src/sim/report/report-schema.js';
import type { SimReport } from '../../src/sim/report/sim-report.js';
import { launchChromium } from '../support/browser.js';
import { buildCli, type CliRun, runCli } from '../support/run-cli.js';

/** Runs `evenlb sim ...args` with a deadline. */
const runSim = (cli: string, args: readonly string[]): Promise<CliRun> =>
  runCli(cli, ['sim', ...args], { timeoutMs: 60_000 });

let cli: string;
let dir: string;

beforeAll(() => {
  cli = buildCli('evenlb-sim-test');
  dir = mkdtempSync(join(tmpdir(), 'evenlb-sim-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const quickSteady = [
  '--scenario',
  'steady',
  '--duration',
  '20s',
  '--dataplanes',
  'iptables,ipvs-lc,evenlb:round-robin',
];

describe('evenlb sim', () => {
  it('prints a table with max/mean, CoV, Jain, p99 and per-pod load for each dataplane', async () => {
    const r = await runSim(cli, [...quickSteady, '--seed', '3']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe('evenlb sim: steady (seed 3, 1 trial)');
    const header = lines.find((l) => l.startsWith('dataplane')) as string;
    for (const col of ['max/mean', 'CoV', 'Jain', 'new pods 90%', 'p99 ms', 'reconn/min', 'v1-01', 'v1-04'])
      expect(header).toContain(col);
    for (const dp of ['iptables', 'ipvs-lc', 'evenlb:round-robin']) {
      expect(lines.some((l) => l.startsWith(`${dp} `))).toBe(true);
    }
    const rr = lines.find((l) => l.startsWith('evenlb:round-robin')) as string;
    expect(rr.split(/\s+/)[1]).toBe('1.00');
  });

  it('--json follows the documented schema and carries the figures', async () => {
    const r = await runSim(cli, [...quickSteady, '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as SimReport;
    const ajv = new Ajv({ allErrors: true, strict: false });
    const validate = ajv.compile(simReportSchema);
    expect(validate(report), JSON.stringify(validate.errors)).toBe(true);
    expect(report.scenario).toBe('steady');
    expect(report.results.map((x) => x.dataplane)).toEqual(['iptables', 'ipvs-lc', 'evenlb:round-robin']);
    for (const x of report.results) {
      expect(x.pods).toHaveLength(4);
      expect(x.pods.reduce((s, p) => s + p.share, 0)).toBeCloseTo(1, 5);
      const counts = x.pods.map((p) => p.requests);
      const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
      expect(x.maxOverMean).toBeCloseTo(Math.max(...counts) / mean, 5);
      expect(x.jain).toBeGreaterThan(0);
      expect(x.latencyMs?.p99).toBeGreaterThan(0);
    }
  });

  it('same seed → byte-identical JSON and table; another seed → different', async () => {
    const args = [
      '--scenario',
      'random-connections',
      '--trials',
      '20',
      '--requests',
      '20',
      '--dataplanes',
      'iptables,ipvs-sh,apiserver-legacy,evenlb:least-request,evenlb:peak-ewma,evenlb:maglev',
    ];
    const [a, b, c] = await Promise.all([
      runSim(cli, [...args, '--json', '--seed', '9']),
      runSim(cli, [...args, '--json', '--seed', '9']),
      runSim(cli, [...args, '--json', '--seed', '10']),
    ]);
    expect(a.code).toBe(0);
    expect(a.stdout.length).toBeGreaterThan(1000);
    expect(b.stdout).toBe(a.stdout);
    expect(c.stdout).not.toBe(a.stdout);
    const [t1, t2] = await Promise.all([runSim(cli, [...args, '--seed', '9']), runSim(cli, [...args, '--seed', '9'])]);
    expect(t2.stdout).toBe(t1.stdout);
    expect(t1.stdout).toContain('20 trials');
    // Five CLI processes on a shared two-core machine: the deadline is runSim's, per process.
  }, 180_000);

  it('--html writes a self-contained page that renders its charts offline', async (ctx) => {
    const file = join(dir, 'report.html');
    const r = await runSim(cli, [
      '--scenario',
      'hpa-scale-out',
      '--duration',
      '30s',
      '--dataplanes',
      'iptables,evenlb:least-request',
      '--html',
      file,
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`wrote ${file}`);
    const html = readFileSync(file, 'utf8');
    expect(html).toContain('Chart.js v4');
    expect(html).toMatch(/<script id="sim-data" type="application\/json">\{/);
    // Nothing is fetched: no external scripts, styles or images.
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).not.toMatch(/<link[^>]+href=/);
    expect(html).not.toMatch(/src="https?:/);

    const browser = await launchChromium(ctx);
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      const requests: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      page.on('request', (req) => {
        if (!req.url().startsWith('file:')) requests.push(req.url());
      });
      await page.goto(`file://${file}`);
      await page.waitForFunction("document.querySelectorAll('canvas').length >= 4", undefined, { timeout: 15_000 });
      // Chart.js keeps every chart it drew; each needs a sized canvas with pixels on it.
      const charts = (await page.evaluate(`Object.values(Chart.instances).map((c) => {
        const canvas = c.canvas;
        const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        let painted = 0;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) painted++;
        return { width: canvas.width, painted };
      })`)) as { width: number; painted: number }[];
      const rows = await page.locator('#summary tbody tr').count();
      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
      // Shares, the new pods' share after ready, and one timeline per dataplane.
      expect(charts).toHaveLength(4);
      for (const c of charts) {
        expect(c.width).toBeGreaterThan(100);
        expect(c.painted).toBeGreaterThan(1000);
      }
      expect(rows).toBe(2);
    } finally {
      await browser.close();
    }
  });

  it('runs a YAML scenario file', async () => {
    const file = join(dir, 'scenario.yaml');
    writeFileSync(
      file,
      [
        'name: two-pods',
        'pods: { count: 2, workers: 2 }',
        'clients: { count: 2, connections: 2, arrival: { type: periodic, ratePerSecond: 10, count: 50 } }',
        'measure: { from: start }',
        '',
      ].join('\n'),
    );
    const r = await runSim(cli, ['--scenario-file', file, '--dataplanes', 'evenlb:round-robin', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as SimReport;
    expect(report.scenario).toBe('two-pods');
    expect(report.results[0]?.requests.window).toBe(100);
    expect(report.results[0]?.pods.map((p) => p.requests)).toEqual([50, 50]);
  });

  it('--list names every scenario and an evenlb dataplane per registered policy', async () => {
    const r = await runSim(cli, ['--list']);
    expect(r.code).toBe(0);
    for (const s of [
      'steady',
      'rolling-update',
      'hpa-scale-out',
      'heterogeneous-durations',
      'webhook-burst',
      'random-connections',
      'fleet-scale-out',
      'zone-skew',
    ]) {
      expect(r.stdout).toContain(s);
    }
    for (const p of registeredPolicies()) expect(r.stdout).toContain(`evenlb:${p.name}`);
    for (const d of [
      'iptables',
      'nftables',
      'ipvs-rr',
      'ipvs-lc',
      'ipvs-sh',
      'apiserver-legacy',
      'apiserver-roundtrip',
    ]) {
      expect(r.stdout).toContain(d);
    }
  });

  const usage: { args: string[]; message: RegExp }[] = [
    { args: ['--scenario', 'steady', '--bogus'], message: /unknown option '--bogus'/ },
    { args: ['--scenario', 'steady', '--pods', '0'], message: /--pods <K>.*expected an integer between 1 and 100000/ },
    { args: ['--scenario', 'steady', '--max-age', 'soon'], message: /--max-age.*expected a duration like 500ms/ },
    { args: ['--scenario', 'nope'], message: /argument 'nope' is invalid. Allowed choices are steady, rolling-update/ },
    { args: [], message: /choose one of --scenario <name>/ },
    {
      args: ['--scenario', 'steady', '--dataplanes', 'iptables,ipvs-wrr'],
      message: /unknown dataplane "ipvs-wrr"; known dataplanes: iptables, nftables/,
    },
    { args: ['--scenario', 'steady', '--balancers', '0'], message: /--balancers <M>.*expected an integer between 1/ },
    {
      args: ['--scenario', 'steady', '--discovery-spread', 'soon'],
      message: /--discovery-spread.*expected a duration like 500ms/,
    },
    {
      args: ['--scenario', 'steady', '--pod-zones', 'a,b,c'],
      message: /--pod-zones <list>.*expected a comma-separated list of integers >= 0/,
    },
    {
      args: ['--scenario', 'steady', '--pod-zones', '2,1'],
      message: /pods\.zones.*pods per zone summing to pods\.count \(4\)/,
    },
    {
      args: ['--scenario', 'steady', '--pod-zones', '2,2', '--client-zones', '50,30,20'],
      message: /clients\.zones.*one weight per pod zone \(2\)/,
    },
    {
      args: ['--scenario', 'steady', '--scale-to', '8'],
      message: /--scale-to does not apply: the scenario has no scale event/,
    },
    {
      args: ['--scenario', 'steady', '--connections', '4', '--clients', '9'],
      message: /option "clients\.count" must be <= clients\.connections \(4\); received 9/,
    },
  ];
  // Each run starts a fresh CLI process: at most 4 at a time, so a loaded two-core machine
  // spends its time on the runs rather than on switching between a dozen start-ups.
  it('exits 2 with a clear message for bad flags, values, dataplanes and knobs', { timeout: 120_000 }, async () => {
    const results: CliRun[] = [];
    for (let i = 0; i < usage.length; i += 4) {
      results.push(...(await Promise.all(usage.slice(i, i + 4).map((u) => runSim(cli, u.args)))));
    }
    results.forEach((r, i) => {
      const u = usage[i] as (typeof usage)[number];
      const label = u.args.join(' ') || '(no scenario)';
      expect(r.code, label).toBe(2);
      expect(r.stdout, label).toBe('');
      expect(r.stderr, label).toMatch(u.message);
    });
  });

  it('exits 2 naming the field for an invalid scenario file, and for invalid YAML', { timeout: 120_000 }, async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      'name: bad\npods: { count: 4 }\nclients: { connections: 8 }\nevents:\n  - { type: scale, atMs: 1000, pods: -2 }\nmeasure: { windowMs: 1000 }\n',
    );
    const r = await runSim(cli, ['--scenario-file', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`scenario ${bad}: option "events[0].pods" must be an integer >= 1; received -2`);
    const broken = join(dir, 'broken.yaml');
    writeFileSync(broken, 'name: [unclosed\n');
    const y = await runSim(cli, ['--scenario-file', broken]);
    expect(y.code).toBe(2);
    expect(y.stderr).toContain(`scenario file ${broken} is not valid YAML`);
    const missing = await runSim(cli, ['--scenario-file', join(dir, 'missing.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read scenario file .*missing\.yaml: ENOENT/);
  });
});
