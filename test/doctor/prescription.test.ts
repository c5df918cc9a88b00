/**
 * The doctor's prescriptions against the simulator run directly: every predicted max/mean is
 * within 0.1 of `runScenario` on the scenario the report carries, and — as a user would check
 * it — of `evenlb sim` run as a child process, both from the report's scenario file and from
 * the same settings given as `evenlb sim --scenario steady` flags. Reconnects per minute (the
 * sim summary has no such figure yet, so the doctor computes it from connections opened over
 * the run) must match what the chosen connection age implies.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { systemClock } from '../../src/core/clock.js';
import { parseDoctorOptions } from '../../src/doctor/doctor-options.js';
import type { CureAdvice } from '../../src/doctor/prescribe.js';
import { type DoctorReport, runDoctor } from '../../src/doctor/run-doctor.js';
import { parseScenario, resolveDataplanes, runScenario, type SimReport } from '../../src/sim/index.js';
import { buildCli, runCli } from '../support/run-cli.js';
import { CAUSE_CASES } from './scenarios.js';
import { startFakeCluster } from './support/fake-cluster.js';

let cli: string;
let dir: string;
const reports = new Map<string, DoctorReport>();

beforeAll(async () => {
  cli = buildCli('evenlb-doctor-test');
  dir = mkdtempSync(join(tmpdir(), 'evenlb-doctor-rx-'));
  for (const cause of ['kube-proxy-pinning', 'scale-out-starvation', 'apiserver-webhook-pool']) {
    const cluster = await startFakeCluster(CAUSE_CASES.find((c) => c.cause === cause)!.spec);
    try {
      const options = parseDoctorOptions({
        service: cluster.service,
        prometheus: cluster.prometheusUrl,
        failAbove: 1.3,
      });
      reports.set(
        cause,
        await runDoctor(options, {
          clock: systemClock,
          nowMs: Date.now,
          connection: cluster.api.connection(),
          env: {},
        }),
      );
    } finally {
      await cluster.close();
    }
  }
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const simulated = (r: DoctorReport): CureAdvice[] =>
  [r.prescription!.asIs, ...r.prescription!.cures].filter((c) => c.simulation !== null);

describe('prescriptions are the simulator’s figures', { timeout: 120_000 }, () => {
  it('every predicted max/mean is within 0.1 of runScenario on the same scenario, dataplane and seed', () => {
    let checked = 0;
    for (const [cause, report] of reports) {
      for (const cure of simulated(report)) {
        const sim = cure.simulation!;
        const direct = runScenario({
          scenario: parseScenario(sim.scenario, 'direct'),
          dataplanes: resolveDataplanes([sim.dataplane]),
          seed: sim.seed,
        }).results[0]!;
        expect(Math.abs(cure.predicted!.maxOverMean - direct.maxOverMean), `${cause} ${cure.id}`).toBeLessThanOrEqual(
          0.1,
        );
        checked++;
      }
    }
    expect(checked).toBe(16);
  });

  it('the chosen cure and age recycling match `evenlb sim --scenario-file` run as a child process', async () => {
    const report = reports.get('scale-out-starvation')!;
    const p = report.prescription!;
    const chosen = p.cures.find((c) => c.id === p.chosen)!;
    const age = p.cures.find((c) => c.id === 'age-recycling')!;
    for (const cure of [chosen, age, p.asIs]) {
      const file = join(dir, `${cure.id}.yaml`);
      writeFileSync(file, stringify(cure.simulation!.scenario));
      const r = await runCli(
        cli,
        [
          'sim',
          '--scenario-file',
          file,
          '--dataplanes',
          cure.simulation!.dataplane,
          '--seed',
          String(cure.simulation!.seed),
          '--json',
        ],
        { timeoutMs: 120_000 },
      );
      expect(r.code, r.stderr).toBe(0);
      const sim = JSON.parse(r.stdout) as SimReport;
      expect(Math.abs(cure.predicted!.maxOverMean - sim.results[0]!.maxOverMean), cure.id).toBeLessThanOrEqual(0.1);
    }
  });

  it('kube-proxy pinning: the same settings as `evenlb sim --scenario steady` flags give the same figures', async () => {
    const report = reports.get('kube-proxy-pinning')!;
    const p = report.prescription!;
    expect(p.asIs.predicted!.maxOverMean).toBeGreaterThan(1.3);
    const agent = p.cures.find((c) => c.id === 'balanced-agent')!;
    expect(agent.predicted!.maxOverMean).toBeLessThan(1.1);
    expect(p.chosen).toBe('balanced-agent');
    const age = p.cures.find((c) => c.id === 'age-recycling')!;
    const scenario = age.simulation!.scenario as {
      pods: { serviceTime: { meanMs: number } };
      clients: { arrival: { ratePerSecond: number } };
      server: { lifetime: { maxConnectionAgeMs: number } };
    };
    const ageMs = scenario.server.lifetime.maxConnectionAgeMs;
    // The longest candidate age meeting the target was chosen.
    expect(age.predicted!.maxOverMean).toBeLessThanOrEqual(p.target);
    for (const [cure, extra] of [
      [age, ['--server-max-age', `${ageMs}ms`, '--dataplanes', 'iptables']],
      [agent, ['--dataplanes', 'evenlb:least-request']],
    ] as const) {
      const args = [
        ...['sim', '--scenario', 'steady', '--pods', '4', '--connections', '8', '--clients', '8', '--workers', '8'],
        ...[
          '--rate',
          String(scenario.clients.arrival.ratePerSecond),
          '--service-time',
          `${scenario.pods.serviceTime.meanMs}ms`,
        ],
        ...['--duration', '300s', '--trials', '3', '--seed', '1', '--json', ...extra],
      ];
      const r = await runCli(cli, args, { timeoutMs: 120_000 });
      expect(r.code, r.stderr).toBe(0);
      const sim = JSON.parse(r.stdout) as SimReport;
      expect(Math.abs(cure.predicted!.maxOverMean - sim.results[0]!.maxOverMean), cure.id).toBeLessThanOrEqual(0.1);
    }
    // 8 connections each closed once per age (±10% jitter): 8 × 60 s / age reconnects a minute.
    // The simulator reports reconnectsPerMinute (dials inside the measured window) itself.
    expect(age.predicted!.reconnectsFrom).toBe('simulator');
    const expected = (8 * 60_000) / ageMs;
    expect(age.predicted!.reconnectsPerMinute).toBeGreaterThan(expected * 0.8);
    expect(age.predicted!.reconnectsPerMinute).toBeLessThan(expected * 1.2);
  });

  it('the webhook pool: kube-apiserver’s round-trip fix is chosen; client-side cures do not apply', () => {
    const p = reports.get('apiserver-webhook-pool')!.prescription!;
    expect(p.asIs.simulation?.dataplane).toBe('apiserver-legacy');
    expect(p.chosen).toBe('apiserver-round-trip');
    for (const id of ['balanced-agent', 'grpc-plugin', 'proxy']) {
      expect(p.cures.find((c) => c.id === id)?.applicable).toBe(false);
    }
    expect(p.cures.find((c) => c.id === 'apiserver-round-trip')!.predicted!.maxOverMean).toBeLessThan(1.1);
  });
});
