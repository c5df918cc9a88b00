/**
 * Every cause `evenlb doctor` names, constructed on purpose against the fake API server with
 * real pod metrics servers and a fake Prometheus: the doctor names the cause (and calls a
 * balanced Service balanced), reading load through the API server's pod proxy and through
 * Prometheus. The evidence must carry the figures that decided it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { parseDoctorOptions } from '../../src/doctor/doctor-options.js';
import { type DoctorReport, runDoctor } from '../../src/doctor/run-doctor.js';
import { CAUSE_CASES } from './scenarios.js';
import { type FakeCluster, startFakeCluster } from './support/fake-cluster.js';

let cluster: FakeCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function doctor(c: FakeCluster, extra: Record<string, unknown>): Promise<DoctorReport> {
  return runDoctor(parseDoctorOptions({ service: c.service, scrapeIntervalMs: 500, ...extra }), {
    clock: systemClock,
    nowMs: Date.now,
    connection: c.api.connection(),
    env: {},
  });
}

describe('evenlb doctor names the cause', () => {
  for (const { cause, spec } of CAUSE_CASES) {
    it(`${cause}, read through the pod proxy`, async () => {
      cluster = await startFakeCluster(spec);
      const r = await doctor(cluster, {});
      expect(r.diagnosis.cause, r.diagnosis.evidence.join('\n')).toBe(cause);
      expect(r.load.metric).toBe('http_requests_total');
      expect(r.figures.readyPods).toBe(spec.pods.length);
      const rates = spec.pods.map((p) => p.requestsPerSecond);
      const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
      // Scrapes through the proxy measure the configured rates (timing noise only).
      expect(r.figures.maxOverMean).toBeGreaterThan((Math.max(...rates) / mean) * 0.9);
      expect(r.figures.maxOverMean).toBeLessThan((Math.max(...rates) / mean) * 1.1);
      expect(r.prescription === null).toBe(cause === 'balanced');
    });

    it(`${cause}, read from Prometheus`, async () => {
      cluster = await startFakeCluster(spec);
      const r = await doctor(cluster, { prometheus: cluster.prometheusUrl });
      expect(r.diagnosis.cause, r.diagnosis.evidence.join('\n')).toBe(cause);
      expect(r.load.source).toContain('rate(http_requests_total{namespace="shop"');
      expect(r.load.connectionsMetric).toBe('evenlb_server_open_connections');
    });
  }

  it('shows the evidence: the starving pods and their share, the stable skew, the webhook caller', async () => {
    const byCause = new Map(CAUSE_CASES.map((c) => [c.cause, c.spec]));
    cluster = await startFakeCluster(byCause.get('scale-out-starvation')!);
    let r = await doctor(cluster, { prometheus: cluster.prometheusUrl });
    expect(r.figures.newestPods?.pods).toHaveLength(4);
    expect(r.figures.newestPods?.shareOfFair).toBeLessThan(0.02);
    expect(r.diagnosis.evidence.join('\n')).toMatch(
      /4 pods created 290 min after the others .* take 1% of their fair share/,
    );
    await cluster.close();

    cluster = await startFakeCluster(byCause.get('kube-proxy-pinning')!);
    r = await doctor(cluster, { prometheus: cluster.prometheusUrl });
    expect(r.figures.stability).toBeGreaterThan(0.99);
    expect(r.diagnosis.evidence.join('\n')).toContain('open connections per pod: 1/5/1/1 (8 in all)');
    await cluster.close();

    cluster = await startFakeCluster(byCause.get('apiserver-webhook-pool')!);
    r = await doctor(cluster, { prometheus: cluster.prometheusUrl });
    expect(r.diagnosis.evidence.join('\n')).toContain(
      'ValidatingWebhookConfiguration policy.example.com (webhook validate.policy.example.com)',
    );
  });

  it('a skew that moves between windows is not called pinning', async () => {
    const pinning = CAUSE_CASES.find((c) => c.cause === 'kube-proxy-pinning')!.spec;
    cluster = await startFakeCluster({
      ...pinning,
      pods: pinning.pods.map((p, i) => ({ ...p, earlierRequestsPerSecond: [220, 60, 60, 60][i] })),
    });
    const r = await doctor(cluster, { prometheus: cluster.prometheusUrl });
    expect(r.diagnosis.cause).toBe('unexplained');
  });
});
