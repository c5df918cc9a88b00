/**
 * `evenlb doctor`'s options: one spec, one parse function, defaults with `??`, unknown keys
 * rejected, errors naming the field (the shared options parser). The CLI builds the raw object
 * from its flags; tests pass one directly.
 */
import { opt, optionError, type Parsed, parseOptions } from '../core/options.js';

const COMPONENT = 'evenlb doctor';

/** kube-proxy modes the doctor knows; `auto` reads kube-system/kube-proxy's ConfigMap. */
export const PROXY_MODES = ['auto', 'iptables', 'nftables', 'ipvs-rr', 'ipvs-lc', 'ipvs-sh'] as const;
export type ProxyMode = (typeof PROXY_MODES)[number];

const isHttpUrl = (v: unknown): v is string => {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
};

export const doctorOptionsSpec = {
  /** The Service to examine, `namespace/name`. */
  service: opt.custom(
    'a Service as "namespace/name" (required)',
    (v): v is string =>
      typeof v === 'string' && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v),
  ),
  /** A kubeconfig file; default KUBECONFIG, in-cluster, then ~/.kube/config. */
  kubeconfig: opt.string({ nonEmpty: true, optional: true }),
  context: opt.string({ nonEmpty: true, optional: true }),
  /** Prometheus base URL; unset = scrape each pod through the API server's pod proxy. */
  prometheus: opt.custom('an http:// or https:// URL', isHttpUrl, { optional: true }),
  /** PromQL giving requests per second by pod; `{{namespace}}`, `{{pods}}` (a regex), `{{window}}` are filled in. */
  query: opt.string({ nonEmpty: true, optional: true }),
  /** PromQL giving open connections by pod (same placeholders). */
  connectionsQuery: opt.string({ nonEmpty: true, optional: true }),
  /** The label naming the pod in Prometheus results. */
  podLabel: opt.string({ nonEmpty: true, default: 'pod' }),
  /** Request counter to read (scrape and default query); unset = the first known name found. */
  requestsMetric: opt.string({ nonEmpty: true, optional: true }),
  /** Open-connections gauge to read; unset = the first known name found. */
  connectionsMetric: opt.string({ nonEmpty: true, optional: true }),
  /** Pod port serving metrics; unset = the `prometheus.io/port` annotation, else 9090. */
  metricsPort: opt.int({ min: 1, max: 65535, optional: true }),
  /** Metrics path; unset = the `prometheus.io/path` annotation, else /metrics. */
  metricsPath: opt.string({ nonEmpty: true, optional: true }),
  /** Time between scrapes (three scrapes make two rate windows), ms. */
  scrapeIntervalMs: opt.number({ min: 0, exclusiveMin: true, default: 10_000 }),
  /** Prometheus rate() window, ms. */
  windowMs: opt.number({ min: 1000, default: 300_000 }),
  /** Prometheus: how far back the second reading is taken (skew stable over time?), ms. */
  lookbackMs: opt.number({ min: 0, exclusiveMin: true, default: 1_800_000 }),
  /** Exit 1 when max/mean is above this. */
  failAbove: opt.number({ min: 1, optional: true }),
  /** At or below this max/mean the Service is called balanced. */
  balancedBelow: opt.number({ min: 1, default: 1.2 }),
  /** kube-proxy mode; `auto` reads it from kube-system/kube-proxy when allowed. */
  proxyMode: opt.oneOf(PROXY_MODES, { default: 'auto' }),
  /** Deadline of each API server, Prometheus or scrape request, ms. */
  timeoutMs: opt.number({ min: 0, exclusiveMin: true, default: 10_000 }),
  /** Simulator seed: the same seed gives the same predictions. */
  seed: opt.int({ min: 0, max: 4_294_967_295, default: 1 }),
};

export type DoctorOptions = Parsed<typeof doctorOptionsSpec> & {
  readonly namespace: string;
  readonly name: string;
};

/**
 * Validates `input`; returns frozen options with the Service split into namespace and name.
 *
 * @example
 * parseDoctorOptions({ service: 'prod/web', failAbove: 1.3 })
 */
export function parseDoctorOptions(input: unknown): DoctorOptions {
  const o = parseOptions(COMPONENT, input, doctorOptionsSpec);
  if (o.query !== undefined && o.prometheus === undefined) {
    throw optionError(COMPONENT, 'prometheus', 'set when "query" is given', undefined);
  }
  const [namespace = '', name = ''] = o.service.split('/');
  return Object.freeze({ ...o, namespace, name });
}
