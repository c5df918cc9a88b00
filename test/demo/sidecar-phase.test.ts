/**
 * The demo's `sidecar` phase against its goal: plain node:http servers, each behind `evenlb
 * proxy --sidecar`, pinned keep-alive clients, a scale-out and a rolling restart — over seeds
 * 1–3, the median max/mean is at most 1.15, the median share of the pod added by the scale-out
 * is at least 90% of its fair share, and no request fails in any run. Through real kube-proxy
 * iptables rules in a network namespace where the machine allows it (root, iproute2,
 * iptables), on loopback otherwise (a skip note says why). The runs are printed with the
 * machine's load average: these figures measure a balance reached on real processes, and a
 * saturated machine slows every reconnect.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PhaseResult } from '../../src/demo/phase-result.js';
import { netnsSupport } from '../support/netns-support.js';
import { runBuiltCli } from './demo-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'evenlb-demo-sidecar-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

describe('evenlb demo --phases sidecar, seeds 1–3', () => {
  const support = netnsSupport();
  const dataplane = support.ok ? 'netfilter' : 'loopback';
  it(`${dataplane}${support.ok ? '' : ` (${support.reason})`}: median max/mean <= 1.15, new pod >= 90% of fair, 0 failed`, async () => {
    const runs: { seed: number; load: number; phase: PhaseResult }[] = [];
    for (const seed of [1, 2, 3]) {
      const json = join(dir, `seed-${seed}.json`);
      const load = loadavg()[0] as number;
      const r = await runBuiltCli(
        [
          'demo',
          '--phases',
          'sidecar',
          '--dataplane',
          dataplane,
          '--seed',
          String(seed),
          '--json',
          json,
          '--output',
          join(dir, `seed-${seed}.html`),
          '--progress',
          'none',
        ],
        { timeoutMs: 240_000 },
      );
      expect(r.code, r.stderr).toBe(0);
      const phase = (JSON.parse(readFileSync(json, 'utf8')) as { phases: PhaseResult[] }).phases[0] as PhaseResult;
      runs.push({ seed, load, phase });
    }
    const done = runs.map((r) => {
      if (r.phase.status !== 'ok') throw new Error(`seed ${r.seed}: ${r.phase.status}: ${r.phase.reason}`);
      return { ...r, phase: r.phase };
    });
    console.log(
      done
        .map(
          (r) =>
            `seed ${r.seed} (${dataplane}, load average ${r.load.toFixed(1)}): max/mean ${r.phase.maxOverMean.toFixed(2)}, ` +
            `new pod ${(r.phase.newPodShareOfFair * 100).toFixed(0)}% of fair, ` +
            `failed ${r.phase.failedRequests} of ${r.phase.okRequests + r.phase.failedRequests}`,
        )
        .join('\n'),
    );
    for (const r of done)
      expect(r.phase.failedRequests, `seed ${r.seed}: ${JSON.stringify(r.phase.errorsByCode)}`).toBe(0);
    expect(median(done.map((r) => r.phase.maxOverMean))).toBeLessThanOrEqual(1.15);
    expect(median(done.map((r) => r.phase.newPodShareOfFair))).toBeGreaterThanOrEqual(0.9);
  }, 900_000);
});
