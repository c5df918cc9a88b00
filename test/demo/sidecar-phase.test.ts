/**
 * The demo's `sidecar` phase: plain node:http servers, each behind `evenlb proxy --sidecar`,
 * pinned keep-alive clients, a scale-out and a rolling restart, over seeds 1–3. Through real
 * kube-proxy iptables rules in a network namespace where the machine allows it (root, iproute2,
 * iptables), on loopback otherwise (the title says why). The runs are printed with the
 * machine's load average.
 *
 * Asserted in every run: no request fails, and the median max/mean is at most 1.15 (the goal's
 * figures). The goal's third figure — the pod added by the scale-out at ≥ 90% of its fair share
 * (median of the seeds) — is asserted when the runs drove at least 70% of the demo's nominal load
 * (median of the seeds; the demo alone drives 77–87% of it on two quiet cores). The clients send
 * one request at a time and, once behind their schedule, the next as soon as the last returns:
 * on a machine that cannot carry the load, a connection's rate is one over the latency through
 * the pod it landed on, so whatever makes the new pod slower than its peers in its first seconds
 * shows as a smaller share. Until 2026-12-02 that was the fair-share exchange's client, left cold
 * by the sidecar pods' warm-up and compiled at the new pod's first question to a peer (undici's
 * parser and its WebAssembly): each of the new pod's connections carried 0.4–0.8× the others'
 * requests on a saturated machine. Warmed, the share is 85–97% per run with the clients at 29–65%
 * of their pace and 94–96% at 77–87% (docs/demo.md). Below 70% the goal is not judged (the test
 * says so and skips); what is asserted then is that fair share fills the new pod at all — a
 * median above a quarter of its fair share, where pinned connections leave it at 0% — when the
 * runs drove at least half the nominal load.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompletedPhase, PhaseResult } from '../../src/demo/phase-result.js';
import { netnsSupport } from '../support/netns-support.js';
import { runBuiltCli } from './demo-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'evenlb-demo-sidecar-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SEEDS = [1, 2, 3];
/** The demo's defaults: 20 clients × 80 requests/s for 11 s. */
const NOMINAL_REQUESTS = 20 * 80 * 11;
/** The share of the nominal load from which the goal is judged (median of the runs). */
const GOAL_PACE = 0.7;
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const support = netnsSupport();
const dataplane = support.ok ? 'netfilter' : 'loopback';
const runs: { seed: number; load: readonly number[]; phase: CompletedPhase }[] = [];

beforeAll(async () => {
  for (const seed of SEEDS) {
    const json = join(dir, `seed-${seed}.json`);
    const before = loadavg()[0] as number;
    const r = await runBuiltCli(
      ['demo', '--phases', 'sidecar', '--dataplane', dataplane, '--seed', String(seed), '--json', json].concat([
        '--output',
        join(dir, `seed-${seed}.html`),
        '--progress',
        'none',
      ]),
      { timeoutMs: 240_000 },
    );
    if (r.code !== 0) throw new Error(`seed ${seed}: exit ${r.code}: ${r.stderr}`);
    const phase = (JSON.parse(readFileSync(json, 'utf8')) as { phases: PhaseResult[] }).phases[0] as PhaseResult;
    if (phase.status !== 'ok') throw new Error(`seed ${seed}: ${phase.status}: ${phase.reason}`);
    runs.push({ seed, load: [before, loadavg()[0] as number], phase });
  }
  console.log(
    runs
      .map(
        ({ seed, load, phase: p }) =>
          `seed ${seed} (${dataplane}, load average ${load.map((x) => x.toFixed(1)).join(' → ')}): ` +
          `max/mean ${p.maxOverMean.toFixed(2)}, new pod ${(p.newPodShareOfFair * 100).toFixed(0)}% of fair, ` +
          `failed ${p.failedRequests} of ${p.okRequests + p.failedRequests} ` +
          `(${Math.round((100 * (p.okRequests + p.failedRequests)) / NOMINAL_REQUESTS)}% of the nominal load)`,
      )
      .join('\n'),
  );
}, 900_000);

describe(`evenlb demo --phases sidecar, seeds 1–3 (${dataplane}${support.ok ? '' : `: ${support.reason}`})`, () => {
  it('no request fails in any run; median max/mean <= 1.15', () => {
    for (const { seed, phase } of runs)
      expect(phase.failedRequests, `seed ${seed}: ${JSON.stringify(phase.errorsByCode)}`).toBe(0);
    expect(median(runs.map((r) => r.phase.maxOverMean))).toBeLessThanOrEqual(1.15);
  });

  const pace = (): number => median(runs.map((r) => (r.phase.okRequests + r.phase.failedRequests) / NOMINAL_REQUESTS));
  const share = (): number => median(runs.map((r) => r.phase.newPodShareOfFair));

  it('fair share fills the new pod: median share above a quarter of its fair share', (ctx) => {
    if (pace() < 0.5)
      ctx.skip(
        `the machine drove ${Math.round(pace() * 100)}% of the demo's nominal load (median of the runs): the new pod's share would measure the machine`,
      );
    expect(share()).toBeGreaterThan(0.25);
  });

  it('the goal: the new pod at >= 90% of its fair share (median of the seeds) when the clients kept their pace', (ctx) => {
    console.log(
      `new pod, median of the seeds: ${(share() * 100).toFixed(0)}% of its fair share; the clients drove ${Math.round(pace() * 100)}% of the nominal load`,
    );
    if (pace() < GOAL_PACE)
      ctx.skip(
        `the machine drove ${Math.round(pace() * 100)}% of the demo's nominal load (median of the runs), under the ${GOAL_PACE * 100}% at which the goal is judged`,
      );
    expect(share()).toBeGreaterThanOrEqual(0.9);
  });
});
