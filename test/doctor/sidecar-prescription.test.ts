/**
 * `evenlb doctor` prescribes the fair-share sidecar for servers that are not evenlb servers: a
 * Service whose pods (plain servers: their own request counter and connections gauge, no
 * `evenlb_server_*` metric) carry pinned load gets the fair-share cure as `evenlb proxy
 * --sidecar`, with its manifest and the simulator's prediction — meeting the target, the same
 * figure the recycler's shedding gets — and as the best cure that leaves the callers alone;
 * read through the pod proxy and from Prometheus alike. An admission webhook's pods get the
 * webhook variant. Pods that are evenlb servers keep `recycleConnections`. The evidence names
 * kube-proxy's mode (from its ConfigMap, or from a static kube-proxy pod's flags when there is
 * no ConfigMap) and the Service's trafficDistribution.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { parseDoctorOptions } from '../../src/doctor/doctor-options.js';
import { formatDoctorReport } from '../../src/doctor/format-report.js';
import { SIDECAR_MANIFEST, SIDECAR_WEBHOOK_MANIFEST } from '../../src/doctor/prescribe.js';
import { type DoctorReport, runDoctor } from '../../src/doctor/run-doctor.js';
import { repoRoot } from '../support/run-cli.js';
import { CAUSE_CASES } from './scenarios.js';
import { type FakeCluster, type FakeClusterSpec, startFakeCluster } from './support/fake-cluster.js';

let cluster: FakeCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const pinned = CAUSE_CASES.find((c) => c.cause === 'kube-proxy-pinning')?.spec as FakeClusterSpec;
const webhook = CAUSE_CASES.find((c) => c.cause === 'apiserver-webhook-pool')?.spec as FakeClusterSpec;

async function doctor(spec: FakeClusterSpec, extra: Record<string, unknown> = {}): Promise<DoctorReport> {
  cluster = await startFakeCluster(spec);
  const prometheus = extra.prometheus === true ? { prometheus: cluster.prometheusUrl } : {};
  const { prometheus: _, ...rest } = extra;
  return runDoctor(
    parseDoctorOptions({ service: cluster.service, scrapeIntervalMs: 300, failAbove: 1.3, ...rest, ...prometheus }),
    { clock: systemClock, nowMs: Date.now, connection: cluster.api.connection(), env: {} },
  );
}

describe('evenlb doctor: the fair-share sidecar for servers that are not evenlb servers', () => {
  for (const via of ['the pod proxy', 'Prometheus'] as const) {
    it(`pinned load on plain servers (read through ${via}): the sidecar, with its manifest, predicted to meet the target`, async () => {
      const r = await doctor({ ...pinned, evenlbServer: false }, { prometheus: via === 'Prometheus' });
      expect(r.diagnosis.cause).toBe('kube-proxy-pinning');
      expect(r.load.evenlbServer).toBe(false);
      expect(r.load.connectionsMetric).toBe('http_server_active_connections');
      const p = r.prescription;
      expect(p).not.toBeNull();
      const ids = p?.cures.map((c) => c.id) ?? [];
      expect(ids).toContain('fair-share-sidecar');
      expect(ids).not.toContain('fair-share-recycling');
      const sidecar = p?.cures.find((c) => c.id === 'fair-share-sidecar');
      expect(sidecar?.applicable).toBe(true);
      expect(sidecar?.manifest).toBe(SIDECAR_MANIFEST);
      expect(statSync(join(repoRoot, SIDECAR_MANIFEST, 'deployment.yaml')).isFile()).toBe(true);
      expect(sidecar?.settings).toMatch(
        /^evenlb proxy --sidecar --listen :8080 --app http:\/\/127\.0\.0\.1:<app port> --peers k8s:\/\/\/web\.shop:http/,
      );
      // The simulator's prediction, on this Service's pods and connections, meets the target.
      expect(sidecar?.predicted?.maxOverMean).toBeLessThanOrEqual(p?.target as number);
      expect(p?.asIs.predicted?.maxOverMean).toBeGreaterThan(p?.target as number);
      expect(sidecar?.simulation?.scenario).toMatchObject({ server: { fairShare: { tolerance: 0.1 } } });
      // For callers nobody can change, it is the cure.
      expect(p?.serverSide).toBe('fair-share-sidecar');
      expect(p?.cures.find((c) => c.id === 'age-recycling')?.settings).toMatch(
        /^evenlb proxy --sidecar with maxConnectionAgeMs: \d+ \(its sidecar: file\)/,
      );
      const text = formatDoctorReport(r);
      expect(text).toContain(`manifest: ${SIDECAR_MANIFEST}`);
      expect(text).toContain('server side, callers unchanged (+): fair-share sidecar (server side, any language)');
      expect(text).toContain('evenlb server metrics: none');
    }, 120_000);
  }

  it('the same prediction as the recycler’s shedding on the same pods; evenlb servers keep recycleConnections', async () => {
    const plain = await doctor({ ...pinned, evenlbServer: false }, { prometheus: true });
    await cluster?.close();
    const node = await doctor(pinned, { prometheus: true });
    expect(node.load.evenlbServer).toBe(true);
    const recycler = node.prescription?.cures.find((c) => c.id === 'fair-share-recycling');
    const sidecar = plain.prescription?.cures.find((c) => c.id === 'fair-share-sidecar');
    expect(recycler?.settings).toMatch(
      /^recycleConnections\(server, \{ fairShare: \{ peers: 'k8s:\/\/\/web\.shop:http'/,
    );
    expect(node.prescription?.cures.map((c) => c.id)).not.toContain('fair-share-sidecar');
    expect(sidecar?.predicted?.maxOverMean).toBe(recycler?.predicted?.maxOverMean);
    expect(sidecar?.simulation).toEqual(recycler?.simulation);
  }, 120_000);

  it('an admission webhook of plain servers: the webhook variant (TLS with the webhook’s certificate)', async () => {
    const r = await doctor({ ...webhook, evenlbServer: false }, { prometheus: true });
    expect(r.diagnosis.cause).toBe('apiserver-webhook-pool');
    const sidecar = r.prescription?.cures.find((c) => c.id === 'fair-share-sidecar');
    expect(sidecar?.manifest).toBe(SIDECAR_WEBHOOK_MANIFEST);
    expect(sidecar?.settings).toMatch(/--app https:\/\/127\.0\.0\.1:<app port>.*--tls-cert/);
    expect(sidecar?.predicted?.maxOverMean).toBeLessThanOrEqual(r.prescription?.target as number);
    // (With three kube-apiserver connections over three pods, age recycling may meet the target
    // with fewer reconnects: the server-side choice is then that one, deployed in the sidecar.)
    expect(['fair-share-sidecar', 'age-recycling']).toContain(r.prescription?.serverSide);
  }, 120_000);
});

describe('evenlb doctor: kube-proxy mode and trafficDistribution in the evidence', () => {
  it('from the kube-proxy ConfigMap, and a Service with trafficDistribution: PreferClose', async () => {
    const r = await doctor({ ...pinned, trafficDistribution: 'PreferClose' }, { prometheus: true });
    expect(r.kubeProxy).toEqual({ mode: 'iptables', scheduler: undefined, source: 'ConfigMap kube-system/kube-proxy' });
    expect(r.service.trafficDistribution).toBe('PreferClose');
    const evidence = r.diagnosis.evidence.join('\n');
    expect(evidence).toContain('kube-proxy mode iptables: a random endpoint per new connection');
    expect(evidence).toContain('(read from ConfigMap kube-system/kube-proxy)');
    expect(evidence).toContain('Service trafficDistribution PreferClose');
  }, 120_000);

  it('from a static kube-proxy pod’s flags when there is no ConfigMap (ipvs, scheduler lc)', async () => {
    const r = await doctor(
      { ...pinned, kubeProxy: { mode: 'ipvs', scheduler: 'lc', via: 'pod-flags' } },
      { prometheus: true },
    );
    expect(r.kubeProxy).toEqual({
      mode: 'ipvs',
      scheduler: 'lc',
      source: 'flags of Pod kube-system/kube-proxy-node-1',
    });
    expect(r.service.trafficDistribution).toBeNull();
    const evidence = r.diagnosis.evidence.join('\n');
    expect(evidence).toContain(
      'kube-proxy mode ipvs/lc: IPVS scheduler lc, per node (read from flags of Pod kube-system/kube-proxy-node-1)',
    );
    expect(evidence).toContain('Service trafficDistribution not set');
    expect(r.warnings.join('\n')).not.toMatch(/kube-proxy mode unknown/);
    // The simulator stands for what kube-proxy really does.
    expect(r.prescription?.asIs.simulation?.dataplane).toBe('ipvs-lc');
    expect(formatDoctorReport(r)).toContain(
      'kube-proxy: ipvs/lc (flags of Pod kube-system/kube-proxy-node-1); trafficDistribution: not set',
    );
  }, 120_000);
});
