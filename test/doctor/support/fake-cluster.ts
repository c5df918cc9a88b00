/**
 * A Service's world for `evenlb doctor` tests, built on purpose: the fake API server (with
 * workloads) holding the Service, its EndpointSlice, its Pods (creation and readiness times,
 * zones, nodes, revisions), optionally a webhook configuration calling it and kube-proxy's
 * ConfigMap — or, instead, a kube-proxy static pod in kube-system configured by its flags, as
 * GKE and kops run it; one real HTTP server per pod on 127.0.0.1 serving Prometheus text metrics
 * (evenlb's server metrics, or only an app's own for pods that are not evenlb servers), reached
 * through the API server's pod proxy; and a fake Prometheus HTTP API (`/api/v1/query`) serving
 * the same rates. A pod's request counter grows at its configured rate in real time, so any two
 * scrapes give its rate exactly, however loaded the machine is.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { endpointSlice, FakeKubeApiServer, service } from '../../support/fake-kube-api-server.js';

export interface FakePodSpec {
  readonly name: string;
  readonly requestsPerSecond: number;
  /** Rate in the earlier window (Prometheus lookback / first scrape window); default the same. */
  readonly earlierRequestsPerSecond?: number;
  readonly connections?: number;
  /** Minutes since creation. */
  readonly ageMinutes: number;
  readonly zone?: string;
  readonly node?: string;
  readonly revision?: string;
  readonly restarts?: number;
  readonly ready?: boolean;
  readonly cpu?: string;
}

export interface FakeClusterSpec {
  readonly namespace?: string;
  readonly service?: string;
  readonly pods: readonly FakePodSpec[];
  /** A ValidatingWebhookConfiguration calling the Service. */
  readonly webhook?: boolean;
  /**
   * kube-proxy's mode and IPVS scheduler, in the kube-proxy ConfigMap's config.conf (default),
   * or (`via: 'pod-flags'`) only as flags of a kube-proxy static pod in kube-system.
   */
  readonly kubeProxy?: { readonly mode: string; readonly scheduler?: string; readonly via?: 'configmap' | 'pod-flags' };
  readonly sessionAffinity?: string;
  /** The Service's `spec.trafficDistribution`. */
  readonly trafficDistribution?: string;
  /** Request counter the pods expose. */
  readonly metric?: string;
  /**
   * Whether the pods are evenlb servers (default true: they export evenlb_server_open_connections);
   * false: plain servers exporting only their own metrics (connections as http_server_active_connections).
   */
  readonly evenlbServer?: boolean;
}

export const METRICS_PORT = 9090;

/** Serves `http_requests_total` (or `metric`) growing at `rate()` per second, and a connections gauge. */
async function startMetricsPod(
  metric: string,
  rate: () => number,
  connections: number | undefined,
  evenlbServer: boolean,
): Promise<http.Server> {
  let total = 0;
  let last = performance.now();
  const server = http.createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    const now = performance.now();
    total += (rate() * (now - last)) / 1000;
    last = now;
    const lines = [
      `# HELP ${metric} Requests served.`,
      `# TYPE ${metric} counter`,
      `${metric}{code="200",method="GET"} ${(total * 0.9).toFixed(6)}`,
      `${metric}{code="500",method="GET"} ${(total * 0.1).toFixed(6)}`,
    ];
    if (connections !== undefined && evenlbServer) {
      lines.push(
        '# TYPE evenlb_server_open_connections gauge',
        `evenlb_server_open_connections{protocol="http1"} ${connections}`,
      );
    } else if (connections !== undefined) {
      lines.push(
        '# TYPE http_server_active_connections gauge',
        `http_server_active_connections{scheme="http"} ${connections}`,
      );
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(`${lines.join('\n')}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** A fake Prometheus answering instant queries from the pods' configured rates. */
async function startPrometheus(spec: FakeClusterSpec, metric: string): Promise<http.Server> {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://prom');
    // Prometheus takes the parameters in the URL (GET) or as a form (POST).
    let body = '';
    for await (const chunk of req) body += String(chunk);
    const params = req.method === 'POST' ? new URLSearchParams(body) : url.searchParams;
    const query = params.get('query') ?? '';
    const time = Number(params.get('time'));
    res.setHeader('content-type', 'application/json');
    if (url.pathname !== '/api/v1/query') {
      res.writeHead(404).end('{"status":"error","errorType":"not_found","error":"not found"}');
      return;
    }
    if (query.includes('syntax error')) {
      res
        .writeHead(400)
        .end(JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'parse error: unexpected identifier' }));
      return;
    }
    // Readings more than 10 minutes old are the "earlier" window.
    const earlier = Number.isFinite(time) && time < Date.now() / 1000 - 600;
    const result: { metric: Record<string, string>; value: [number, string] }[] = [];
    for (const p of spec.pods) {
      let v: number | undefined;
      const evenlb = spec.evenlbServer !== false;
      if (query.includes(metric))
        v = earlier ? (p.earlierRequestsPerSecond ?? p.requestsPerSecond) : p.requestsPerSecond;
      else if (query.includes('__name__=~"evenlb_server_')) v = evenlb ? 1 : undefined;
      else if (query.includes('evenlb_server_open_connections')) v = evenlb ? p.connections : undefined;
      else if (query.includes('http_server_active_connections')) v = evenlb ? undefined : p.connections;
      if (v !== undefined && query.includes(p.name)) result.push({ metric: { pod: p.name }, value: [time, String(v)] });
    }
    res.writeHead(200).end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

const url = (s: http.Server): string => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

export interface FakeCluster {
  readonly api: FakeKubeApiServer;
  readonly prometheusUrl: string;
  /** `--service` value. */
  readonly service: string;
  close(): Promise<void>;
}

/** Builds the world `spec` describes. */
export async function startFakeCluster(spec: FakeClusterSpec): Promise<FakeCluster> {
  const ns = spec.namespace ?? 'shop';
  const svc = spec.service ?? 'web';
  const metric = spec.metric ?? 'http_requests_total';
  const api = await FakeKubeApiServer.start({ workloads: true, token: 'doctor' });
  const servers: http.Server[] = [];
  const now = Date.now();
  const base = service({ name: svc, namespace: ns, ports: [{ name: 'http', port: 80, targetPort: 8080 }] });
  api.applyService({
    ...base,
    spec: {
      ...base.spec,
      ...(spec.sessionAffinity ? { sessionAffinity: spec.sessionAffinity } : {}),
      ...(spec.trafficDistribution ? { trafficDistribution: spec.trafficDistribution } : {}),
    },
  } as typeof base);
  api.applyEndpointSlice(
    endpointSlice({
      name: `${svc}-abcde`,
      namespace: ns,
      service: svc,
      ports: [{ name: 'http', port: 8080 }],
      endpoints: spec.pods.map((p, i) => ({
        address: `10.1.0.${i + 1}`,
        pod: p.name,
        ready: p.ready ?? true,
        ...(p.zone === undefined ? {} : { zone: p.zone }),
        nodeName: p.node ?? `node-${(i % 3) + 1}`,
      })),
    }),
  );
  for (const p of spec.pods) {
    const created = new Date(now - p.ageMinutes * 60_000).toISOString();
    api.applyObject('pods', {
      metadata: {
        name: p.name,
        namespace: ns,
        creationTimestamp: created,
        labels: { app: svc, 'pod-template-hash': p.revision ?? 'rev1' },
        annotations: { 'prometheus.io/port': String(METRICS_PORT) },
      },
      spec: { nodeName: p.node, containers: [{ name: 'app', resources: { requests: { cpu: p.cpu ?? '500m' } } }] },
      status: {
        podIP: '10.1.0.1',
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            lastTransitionTime: new Date(now - p.ageMinutes * 60_000 + 5000).toISOString(),
          },
        ],
        containerStatuses: [{ name: 'app', restartCount: p.restarts ?? 0 }],
      },
    });
    // The first scrape window is "earlier": the pod switches to its current rate after the first scrape.
    let scrapes = 0;
    const earlier = p.earlierRequestsPerSecond ?? p.requestsPerSecond;
    const server = await startMetricsPod(
      metric,
      () => (scrapes++ <= 1 ? earlier : p.requestsPerSecond),
      p.connections,
      spec.evenlbServer !== false,
    );
    servers.push(server);
    api.setPodProxy(ns, p.name, METRICS_PORT, url(server));
  }
  if (spec.webhook) {
    api.applyObject('validatingwebhookconfigurations', {
      metadata: { name: 'policy.example.com' },
      webhooks: [
        { name: 'validate.policy.example.com', clientConfig: { service: { namespace: ns, name: svc, port: 443 } } },
      ],
    });
  }
  if (spec.kubeProxy !== undefined && spec.kubeProxy.via === 'pod-flags') {
    // A static kube-proxy pod as GKE writes it: the flags in one `sh -c` command line.
    const flags = [
      '--master=https://10.128.0.2',
      '--kubeconfig=/var/lib/kube-proxy/kubeconfig',
      '--cluster-cidr=10.4.0.0/14',
      `--proxy-mode=${spec.kubeProxy.mode}`,
      ...(spec.kubeProxy.scheduler ? [`--ipvs-scheduler=${spec.kubeProxy.scheduler}`] : []),
      '--oom-score-adj=-998',
      '--v=2',
    ];
    api.applyObject('pods', {
      metadata: {
        name: 'kube-proxy-node-1',
        namespace: 'kube-system',
        labels: { component: 'kube-proxy', tier: 'node' },
        annotations: { 'kubernetes.io/config.source': 'file' },
      },
      spec: {
        nodeName: 'node-1',
        hostNetwork: true,
        containers: [
          {
            name: 'kube-proxy',
            image: 'registry.k8s.io/kube-proxy:v1.31.0',
            command: ['/bin/sh', '-c', `exec kube-proxy ${flags.join(' ')} 1>>/var/log/kube-proxy.log 2>&1`],
          },
        ],
      },
      status: { phase: 'Running' },
    });
  } else if (spec.kubeProxy !== undefined) {
    const conf = `mode: ${spec.kubeProxy.mode}\n${spec.kubeProxy.scheduler ? `ipvs:\n  scheduler: ${spec.kubeProxy.scheduler}\n` : ''}`;
    api.applyObject('configmaps', {
      metadata: { name: 'kube-proxy', namespace: 'kube-system' },
      data: { 'config.conf': conf },
    });
  }
  const prometheus = await startPrometheus(spec, metric);
  servers.push(prometheus);
  return {
    api,
    prometheusUrl: url(prometheus),
    service: `${ns}/${svc}`,
    async close() {
      await api.close();
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((r) => {
              s.close(() => r());
              s.closeAllConnections();
            }),
        ),
      );
    },
  };
}
