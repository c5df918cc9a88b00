/**
 * The doctor's errors, in-process against the fake API server: each names the thing at fault
 * and carries the code the CLI maps to its exit status (EVENLB_DISCOVERY_FAILED → 1,
 * EVENLB_SERVICE_NOT_FOUND / EVENLB_INVALID_CONFIG → 2). Optional reads that are forbidden only
 * add a warning.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.js';
import { ErrorCodes } from '../../src/core/errors.js';
import { parseDoctorOptions } from '../../src/doctor/doctor-options.js';
import { runDoctor } from '../../src/doctor/run-doctor.js';
import { CAUSE_CASES } from './scenarios.js';
import { type FakeCluster, startFakeCluster } from './support/fake-cluster.js';

let cluster: FakeCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const balanced = CAUSE_CASES.find((c) => c.cause === 'balanced')!.spec;

function run(c: FakeCluster, extra: Record<string, unknown> = {}) {
  return runDoctor(parseDoctorOptions({ service: c.service, scrapeIntervalMs: 200, ...extra }), {
    clock: systemClock,
    nowMs: Date.now,
    connection: c.api.connection(),
    env: {},
  });
}

describe('evenlb doctor errors', () => {
  it('a forbidden Service or EndpointSlice read names the resource, the RBAC message and the role file', async () => {
    cluster = await startFakeCluster(balanced);
    cluster.api.forbid({ resource: 'services', verb: 'get' });
    await expect(run(cluster)).rejects.toMatchObject({
      code: ErrorCodes.DISCOVERY_FAILED,
      message: expect.stringMatching(
        /^forbidden to read Service shop\/web \(API server http:\/\/127\.0\.0\.1:\d+\): services "web" is forbidden: .*cannot get resource "services".*deploy\/rbac\/doctor\.yaml$/,
      ),
    });
    cluster.api.allowAll();
    cluster.api.forbid({ resource: 'endpointslices' });
    await expect(run(cluster)).rejects.toThrow(
      /forbidden to read EndpointSlices of shop\/web .*cannot list resource "endpointslices" in API group "discovery\.k8s\.io"/,
    );
  });

  it('forbidden webhook configurations and kube-proxy ConfigMap are warnings, not failures', async () => {
    cluster = await startFakeCluster(balanced);
    cluster.api.forbid({ resource: 'validatingwebhookconfigurations' });
    cluster.api.forbid({ resource: 'configmaps' });
    const r = await run(cluster);
    expect(r.diagnosis.cause).toBe('balanced');
    expect(r.warnings).toEqual([
      'cannot list validatingwebhookconfigurations (HTTP 403): webhook callers not checked',
      'cannot read ConfigMap kube-system/kube-proxy (HTTP 403) and no kube-proxy pod in kube-system says its mode: kube-proxy mode unknown (set --proxy-mode)',
    ]);
  });

  it('a missing Service is EVENLB_SERVICE_NOT_FOUND; pods without a known request counter are EVENLB_INVALID_CONFIG', async () => {
    cluster = await startFakeCluster({ ...balanced, metric: 'my_app_hits_total' });
    await expect(run(cluster, { service: 'shop/absent' })).rejects.toMatchObject({
      code: ErrorCodes.SERVICE_NOT_FOUND,
      message: expect.stringContaining('Service shop/absent not found'),
    });
    await expect(run(cluster)).rejects.toMatchObject({
      code: ErrorCodes.INVALID_CONFIG,
      message: expect.stringContaining('no request counter found'),
    });
    // Naming the counter makes it work.
    const r = await run(cluster, { requestsMetric: 'my_app_hits_total' });
    expect(r.load.metric).toBe('my_app_hits_total');
    expect(r.diagnosis.cause).toBe('balanced');
  });

  it('a pod whose metrics endpoint is not reachable names the pod, port and path', async () => {
    cluster = await startFakeCluster(balanced);
    await expect(run(cluster, { metricsPort: 9999 })).rejects.toMatchObject({
      code: ErrorCodes.DISCOVERY_FAILED,
      message: expect.stringMatching(
        /^cannot scrape pod shop\/web-7d9f8-f-\d port 9999 path \/metrics .*HTTP 503: error trying to reach service/,
      ),
    });
  });
});
