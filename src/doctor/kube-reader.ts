/**
 * What the doctor reads from the Kubernetes API, read-only and through discovery's own client
 * (`KubeConnection` + `KubeApiClient`, no second Kubernetes client): the Service, its
 * EndpointSlices, its Pods (age, readiness time, node, zone, restarts, revision), the webhook
 * configurations that call it, the Service's `trafficDistribution`, and kube-proxy's mode —
 * from the kube-system/kube-proxy ConfigMap (kubeadm and most installers), else from the
 * `--proxy-mode` / `--ipvs-scheduler` flags of the kube-proxy pods (static pods and DaemonSets
 * that configure it by flags). Wire objects are read defensively (a field of the wrong type
 * counts as absent).
 *
 * Failures name the thing: an unreachable API server or a 403 on a required read is
 * `EVENLB_DISCOVERY_FAILED` (the check could not run), a missing Service is
 * `EVENLB_SERVICE_NOT_FOUND`. Optional reads (webhook configurations, kube-proxy's ConfigMap)
 * that fail only add a warning.
 */
import { parse as parseYaml } from 'yaml';
import type { Clock } from '../core/clock.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { type ApiResult, KubeApiClient, type Query } from '../discovery/kubernetes/kube-api-client.js';
import { describeConnection, type KubeConnection } from '../discovery/kubernetes/kube-connection.js';
import { isRecord } from '../discovery/kubernetes/kube-objects.js';
import { deadline } from './deadline.js';

/** One ready or not-ready Pod behind the Service, as observed. */
export interface ObservedPod {
  readonly name: string;
  readonly ready: boolean;
  readonly node: string | undefined;
  readonly zone: string | undefined;
  /** Epoch ms. */
  readonly createdAtMs: number | undefined;
  /** Epoch ms of the Ready condition's last transition. */
  readonly readyAtMs: number | undefined;
  readonly restarts: number;
  /** `pod-template-hash` (Deployments) or `controller-revision-hash` (StatefulSets). */
  readonly revision: string | undefined;
  readonly cpuRequestMillis: number | undefined;
  readonly annotations: Readonly<Record<string, string>>;
}

/** A webhook that kube-apiserver calls through this Service. */
export interface WebhookReference {
  readonly kind: 'ValidatingWebhookConfiguration' | 'MutatingWebhookConfiguration';
  readonly configuration: string;
  readonly webhook: string;
}

export interface KubeProxyMode {
  /** `iptables`, `nftables`, `ipvs`, or undefined when unknown. */
  readonly mode: string | undefined;
  readonly scheduler: string | undefined;
  readonly source: string;
}

export interface ServicePortView {
  readonly name: string | undefined;
  readonly port: number;
  readonly targetPort: number | string | undefined;
}

export interface ClusterView {
  readonly namespace: string;
  readonly name: string;
  readonly sessionAffinity: string | undefined;
  /** The Service's `spec.trafficDistribution` (`PreferClose`, `PreferSameZone`, ...), if set. */
  readonly trafficDistribution: string | undefined;
  /** The Service's ports (`targetPort` a number, a name, or unset: the same as `port`). */
  readonly ports: readonly ServicePortView[];
  readonly pods: readonly ObservedPod[];
  readonly webhooks: readonly WebhookReference[];
  readonly kubeProxy: KubeProxyMode;
  readonly warnings: readonly string[];
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const rec = (v: unknown): Record<string, unknown> => (isRecord(v) ? v : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const time = (v: unknown): number | undefined => {
  const t = typeof v === 'string' ? Date.parse(v) : Number.NaN;
  return Number.isFinite(t) ? t : undefined;
};

function cpuMillis(v: unknown): number | undefined {
  const s = str(v);
  if (s === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(s);
  if (m === null) return undefined;
  return m[2] === 'm' ? Number(m[1]) : Number(m[1]) * 1000;
}

function stringMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(rec(v))) if (typeof val === 'string') out[k] = val;
  return out;
}

/** Reads one Service's world. `close()` is the caller's, on the connection. */
export class KubeReader {
  readonly #client: KubeApiClient;
  readonly #timeoutMs: number;
  readonly #clock: Clock;
  /** The API server URL, once credentials were prepared (for messages). */
  #server: string | undefined;

  constructor(connection: KubeConnection, timeoutMs: number, clock: Clock) {
    this.#client = new KubeApiClient(connection);
    this.#timeoutMs = timeoutMs;
    this.#clock = clock;
  }

  #where(): string {
    const from = describeConnection(this.#client.connection.config);
    return this.#server === undefined || from.includes(this.#server) ? from : `API server ${this.#server}, ${from}`;
  }

  async #get(path: string, query: Query = {}): Promise<ApiResult<unknown>> {
    const { signal, dispose } = deadline(this.#clock, this.#timeoutMs);
    try {
      this.#server ??= (await this.#client.connection.prepare()).server;
      return await this.#client.get(path, query, signal);
    } catch (err) {
      if (err instanceof EvenlbError) throw err;
      const reason = signal.aborted
        ? `no answer within ${this.#timeoutMs} ms`
        : ((err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err)));
      throw new EvenlbError(
        ErrorCodes.DISCOVERY_FAILED,
        `cannot reach the Kubernetes API server (${this.#where()}): ${reason}`,
        {
          cause: err,
          details: { connection: this.#where() },
        },
      );
    } finally {
      dispose();
    }
  }

  /** GET that must succeed: any non-2xx answer is an error naming `what`. */
  async #required(path: string, what: string, query: Query = {}): Promise<Record<string, unknown>> {
    return this.#ok(await this.#get(path, query), what);
  }

  /** The object of an answer that must be 2xx; else an error naming `what` (403: the role to grant). */
  #ok(r: ApiResult<unknown>, what: string): Record<string, unknown> {
    if (r.type === 'ok') return rec(r.value);
    const message = r.status?.message ?? `HTTP ${r.statusCode}`;
    if (r.statusCode === 403) {
      throw new EvenlbError(
        ErrorCodes.DISCOVERY_FAILED,
        `forbidden to read ${what} (${this.#where()}): ${message}. Grant the read-only role in deploy/rbac/doctor.yaml`,
        { details: { what, statusCode: 403 } },
      );
    }
    throw new EvenlbError(ErrorCodes.DISCOVERY_FAILED, `cannot read ${what} (${this.#where()}): ${message}`, {
      details: { what, statusCode: r.statusCode },
    });
  }

  /** Reads everything the diagnosis needs about `namespace/name`. */
  async read(namespace: string, name: string, proxyMode: KubeProxyMode | undefined): Promise<ClusterView> {
    const warnings: string[] = [];
    const ns = encodeURIComponent(namespace);
    const svcPath = `/api/v1/namespaces/${ns}/services/${encodeURIComponent(name)}`;
    const svcResult = await this.#get(svcPath);
    if (svcResult.type === 'status' && svcResult.statusCode === 404) {
      throw new EvenlbError(
        ErrorCodes.SERVICE_NOT_FOUND,
        `Service ${namespace}/${name} not found (${this.#where()}); give an existing Service as --service namespace/name`,
        { details: { namespace, name } },
      );
    }
    const service = this.#ok(svcResult, `Service ${namespace}/${name}`);
    const spec = rec(service.spec);
    const slices = await this.#required(
      `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
      `EndpointSlices of ${namespace}/${name}`,
      {
        labelSelector: `kubernetes.io/service-name=${name}`,
      },
    );
    const endpoints = new Map<string, { ready: boolean; zone: string | undefined; node: string | undefined }>();
    for (const slice of arr(slices.items)) {
      for (const e of arr(rec(slice).endpoints)) {
        const ep = rec(e);
        const ref = rec(ep.targetRef);
        const pod = str(ref.name);
        if (pod === undefined || (ref.kind !== undefined && ref.kind !== 'Pod')) continue;
        const c = rec(ep.conditions);
        const ready = c.ready !== false && c.terminating !== true;
        endpoints.set(pod, { ready, zone: str(ep.zone), node: str(ep.nodeName) });
      }
    }
    const selector = Object.entries(stringMap(spec.selector))
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const podList = await this.#required(`/api/v1/namespaces/${ns}/pods`, `Pods of ${namespace}/${name}`, {
      labelSelector: selector === '' ? undefined : selector,
    });
    const pods: ObservedPod[] = [];
    for (const item of arr(podList.items)) {
      const pod = rec(item);
      const meta = rec(pod.metadata);
      const podName = str(meta.name);
      const ep = podName === undefined ? undefined : endpoints.get(podName);
      if (podName === undefined || ep === undefined) continue;
      const status = rec(pod.status);
      const readyCondition = arr(status.conditions)
        .map(rec)
        .find((c) => c.type === 'Ready');
      const labels = stringMap(meta.labels);
      const containers = arr(rec(pod.spec).containers).map(rec);
      const cpu = containers.map((c) => cpuMillis(rec(rec(c.resources).requests).cpu));
      pods.push({
        name: podName,
        ready: ep.ready,
        node: ep.node ?? str(rec(pod.spec).nodeName),
        zone: ep.zone,
        createdAtMs: time(meta.creationTimestamp),
        readyAtMs: time(readyCondition?.lastTransitionTime),
        restarts: arr(status.containerStatuses).reduce<number>((s, c) => s + (Number(rec(c).restartCount) || 0), 0),
        revision: labels['pod-template-hash'] ?? labels['controller-revision-hash'],
        cpuRequestMillis:
          cpu.every((c) => c !== undefined) && cpu.length > 0 ? cpu.reduce((a, b) => a + b, 0) : undefined,
        annotations: stringMap(meta.annotations),
      });
    }
    const missing = [...endpoints.keys()].filter((p) => !pods.some((x) => x.name === p));
    if (missing.length > 0)
      warnings.push(`endpoints name Pods not found by the Service's selector: ${missing.join(', ')}`);
    const webhooks = await this.#webhooks(namespace, name, warnings);
    const kubeProxy = proxyMode ?? (await this.#kubeProxyMode(warnings));
    return {
      namespace,
      name,
      sessionAffinity: str(spec.sessionAffinity),
      trafficDistribution: str(spec.trafficDistribution),
      ports: arr(spec.ports)
        .map(rec)
        .filter((p) => typeof p.port === 'number')
        .map((p) => ({
          name: str(p.name),
          port: p.port as number,
          targetPort: typeof p.targetPort === 'number' ? p.targetPort : str(p.targetPort),
        })),
      pods,
      webhooks,
      kubeProxy,
      warnings,
    };
  }

  async #webhooks(namespace: string, name: string, warnings: string[]): Promise<WebhookReference[]> {
    const out: WebhookReference[] = [];
    const kinds = [
      ['ValidatingWebhookConfiguration', 'validatingwebhookconfigurations'],
      ['MutatingWebhookConfiguration', 'mutatingwebhookconfigurations'],
    ] as const;
    for (const [kind, resource] of kinds) {
      const r = await this.#get(`/apis/admissionregistration.k8s.io/v1/${resource}`);
      if (r.type !== 'ok') {
        warnings.push(`cannot list ${resource} (HTTP ${r.statusCode}): webhook callers not checked`);
        continue;
      }
      for (const item of arr(rec(r.value).items)) {
        const cfg = rec(item);
        for (const w of arr(cfg.webhooks).map(rec)) {
          const svc = rec(rec(w.clientConfig).service);
          if (svc.namespace === namespace && svc.name === name) {
            out.push({ kind, configuration: str(rec(cfg.metadata).name) ?? '?', webhook: str(w.name) ?? '?' });
          }
        }
      }
    }
    return out;
  }

  async #kubeProxyMode(warnings: string[]): Promise<KubeProxyMode> {
    const r = await this.#get('/api/v1/namespaces/kube-system/configmaps/kube-proxy');
    const source = 'ConfigMap kube-system/kube-proxy';
    if (r.type === 'ok') {
      try {
        const conf = rec(parseYaml(stringMap(rec(r.value).data)['config.conf'] ?? '') as unknown);
        const mode = str(conf.mode) ?? 'iptables'; // kube-proxy's default on Linux
        const scheduler = mode === 'ipvs' ? (str(rec(conf.ipvs).scheduler) ?? 'rr') : undefined;
        return { mode, scheduler, source };
      } catch {
        warnings.push(`${source} has no readable config.conf; looking at the kube-proxy pods' flags`);
      }
    }
    const fromPods = await this.#kubeProxyFlags();
    if (fromPods !== undefined) return fromPods;
    const why = r.type === 'ok' ? 'no readable config.conf' : `HTTP ${r.statusCode}`;
    warnings.push(
      `cannot read ${source} (${why}) and no kube-proxy pod in kube-system says its mode: kube-proxy mode unknown (set --proxy-mode)`,
    );
    return { mode: undefined, scheduler: undefined, source: 'unknown' };
  }

  /**
   * kube-proxy's mode from its pods' flags (`--proxy-mode`, `--ipvs-scheduler`), looking for the
   * DaemonSet's pods (`k8s-app=kube-proxy`) and static pods (`component=kube-proxy`). A pod that
   * takes `--config` and no `--proxy-mode` says nothing (its file is what the ConfigMap holds);
   * one with neither runs the default, iptables.
   */
  async #kubeProxyFlags(): Promise<KubeProxyMode | undefined> {
    for (const selector of ['k8s-app=kube-proxy', 'component=kube-proxy']) {
      const r = await this.#get('/api/v1/namespaces/kube-system/pods', { labelSelector: selector });
      if (r.type !== 'ok') return undefined;
      for (const item of arr(rec(r.value).items)) {
        const pod = rec(item);
        const name = str(rec(pod.metadata).name) ?? '?';
        for (const c of arr(rec(pod.spec).containers).map(rec)) {
          const line = [...arr(c.command), ...arr(c.args)].filter((x) => typeof x === 'string').join(' ');
          if (!/(^|[\s/])kube-proxy(\s|$)/.test(line) && !line.includes(' --proxy-mode')) continue;
          const flag = (f: string): string | undefined => new RegExp(`--${f}[= ]([a-z]+)`).exec(line)?.[1];
          const mode = flag('proxy-mode') ?? (line.includes('--config') ? undefined : 'iptables');
          if (mode === undefined) continue;
          const scheduler = mode === 'ipvs' ? (flag('ipvs-scheduler') ?? 'rr') : undefined;
          return { mode, scheduler, source: `flags of Pod kube-system/${name}` };
        }
      }
    }
    return undefined;
  }
}
