/**
 * `evenlb sim` for people who change the numbers: the description says what was simulated
 * after knobs, and `--json` stays a summary (per-pod shares and figures, no time series) whose
 * size grows with pods × dataplanes only — per-pod series come with `--json-series`.
 * In-process (the command with its own stdout/stderr), so a 1,000-pod run stays cheap.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerSimCommand } from '../../src/cli/sim.js';
import { listDataplanes } from '../../src/sim/dataplane/registry.js';
import type { SimReport } from '../../src/sim/report/sim-report.js';

async function sim(args: readonly string[]): Promise<string> {
  let stdout = '';
  const program = new Command('evenlb').exitOverride();
  registerSimCommand(program, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: () => true, isTTY: false },
  });
  await program.parseAsync(['node', 'evenlb', 'sim', ...args]);
  return stdout;
}

describe('evenlb sim output after overrides', () => {
  it('describes what was simulated, not the built-in defaults (regression: --pods 1000 printed "4 single-worker pods")', async () => {
    const out = await sim([
      '--scenario',
      'steady',
      '--pods',
      '1000',
      '--connections',
      '10000',
      '--duration',
      '1s',
      '--dataplanes',
      'iptables',
    ]);
    const description = out.split('\n')[1] as string;
    expect(description).toContain('10,000 long-lived connections to 1,000 single-worker pods');
    expect(description).not.toMatch(/\b16 long-lived|\b4 single-worker/);
    const scaled = await sim([
      '--scenario',
      'hpa-scale-out',
      '--scale-to',
      '12',
      '--duration',
      '1s',
      '--dataplanes',
      'iptables',
    ]);
    expect(scaled.split('\n')[1]).toContain('to 12 at 10 s');
  });

  it('--json at 1,000 pods through every dataplane is a summary well under 10 MB; --json-series adds the series', async () => {
    const args = [
      '--scenario',
      'steady',
      '--pods',
      '1000',
      '--connections',
      '10000',
      '--clients',
      '10',
      '--duration',
      '2s',
    ];
    const text = await sim([...args, '--json']);
    const report = JSON.parse(text) as SimReport;
    expect(report.results).toHaveLength(listDataplanes().length);
    for (const r of report.results) {
      expect(r.series).toBeNull();
      expect(r.pods.filter((p) => p.measured)).toHaveLength(1000);
    }
    expect(text.length).toBeLessThan(5_000_000);
    // One line per pod: the size is pods × dataplanes, not pods × fields.
    expect(text.split('\n').length).toBeLessThan(1000 * report.results.length + 2000);

    const withSeries = JSON.parse(await sim([...args, '--json-series', '--dataplanes', 'iptables'])) as SimReport;
    expect(withSeries.results[0]?.series?.pods).toHaveLength(1000);
    expect(withSeries.results[0]?.series?.pods[0]?.requests).toHaveLength(2);
  });

  it('names kube-proxy modes as kube-proxy:<mode> too, and prints utilization, p99.9 and probes per request', async () => {
    const args = ['--scenario', 'steady', '--duration', '5s'];
    const aliased = await sim([...args, '--dataplanes', 'kube-proxy:iptables,evenlb:least-request', '--json']);
    expect((JSON.parse(aliased) as SimReport).results.map((r) => r.dataplane)).toEqual([
      'iptables',
      'evenlb:least-request',
    ]);
    expect(aliased).toBe(await sim([...args, '--dataplanes', 'iptables,evenlb:least-request', '--json']));
    const all = JSON.parse(await sim([...args, '--dataplanes', 'kube-proxy:*', '--json'])) as SimReport;
    expect(all.results.map((r) => r.dataplane)).toEqual(['iptables', 'nftables', 'ipvs-rr', 'ipvs-lc', 'ipvs-sh']);
    const table = await sim([...args, '--dataplanes', 'kube-proxy:ipvs-*']);
    const header = table.split('\n').find((l) => l.startsWith('dataplane')) as string;
    for (const col of ['util max/mean', 'p99 ms', 'p99.9 ms', 'probes/req']) expect(header).toContain(col);
    expect(table.split('\n').filter((l) => l.startsWith('ipvs-')).length).toBe(3);
    for (const row of table.split('\n').filter((l) => l.startsWith('ipvs-'))) expect(row).toContain(' 0.000 ');
  });
});
