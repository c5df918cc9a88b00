/**
 * Loading the proxy configuration: YAML (or JSON) text or CLI flags → a validated, frozen
 * `ProxyConfig` with every default filled in. Validation runs once per load: the JSON schema
 * (ajv's code for it, generated at build time) first, then the checks a schema cannot express
 * (a route names a known cluster, a policy is registered, a target URI parses, TLS files exist),
 * then the cross-field constraints of `config-constraints.ts` (ordered deadlines, ports, PEM
 * contents). Every failure is an `EVENLB_INVALID_CONFIG` error whose message names the field
 * (`clusters[0].policy`) and the expected value; nothing is started from an invalid configuration.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ensureBuiltinPolicies, getPolicy, registeredPolicies } from '../../balancing/index.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { parseOptions } from '../../core/options.js';
import { parseTarget } from '../../core/target.js';
import { fairShareSpec } from '../../server/fair-share/fair-share-options.js';
import { checkClusterConfig, withClusterDefaults } from './cluster-config-fields.js';
import { checkConstraints } from './config-constraints.js';
import { configError } from './config-error.js';
import type {
  ClusterConfig,
  ListenerConfig,
  ListenerFairShare,
  ListenerLimits,
  ProxyConfig,
  RouteConfig,
} from './config-schema.js';
import validateProxyConfig, { type SchemaError } from './config-validator.generated.js';
import { defaultMaxConnections } from './connection-budget.js';
import { parseAddress } from './listen-address.js';
import { checkListenerLoadReport } from './listener-load-report.js';

export const defaultListenerLimits: ListenerLimits = Object.freeze({
  maxHeaderBytes: 16 * 1024,
  maxHeaderCount: 100,
  firstByteTimeoutMs: 10_000,
  tlsHandshakeTimeoutMs: 10_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 300_000,
  bodyReadTimeoutMs: 60_000,
  idleTimeoutMs: 60_000,
  h2IdleTimeoutMs: 60_000,
  h2PingIntervalMs: 30_000,
  h2PingTimeoutMs: 10_000,
  maxConnections: defaultMaxConnections(),
});

/**
 * `listeners[].recycle.fairShare`: the recycler's own option spec (declared once, in
 * `fairShareSpec`), plus what a proxy listener needs — an `http`/`https` listener and a
 * `loadPort` (the exchange runs on its own port; peers are asked on it).
 */
function checkFairShare(field: string, value: ListenerFairShare, protocol: string): void {
  if (protocol === 'tcp') throw configError(field, 'is only valid for protocol "http" or "https"');
  try {
    parseOptions(field, value, fairShareSpec);
  } catch (err) {
    if (!(err instanceof EvenlbError)) throw err;
    const inner = (err.details as { field?: unknown } | undefined)?.field;
    throw new EvenlbError(ErrorCodes.INVALID_CONFIG, `proxy config: ${err.message}`, {
      details: { field: typeof inner === 'string' ? `${field}.${inner}` : field },
    });
  }
  if (typeof value.peers !== 'string')
    throw configError(`${field}.peers`, 'must be a target URI (k8s:///, file:///, static:///, dns:///)', value.peers);
  if (value.loadPort === undefined)
    throw configError(
      `${field}.loadPort`,
      'is required: a proxy replica serves the load exchange on its own port (plain HTTP) and asks its peers on it',
    );
}

/** Freezes `value` and every object in it. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** `/listeners/0/protocol` → `listeners[0].protocol`. */
function fieldName(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').filter((p) => p !== '');
  if (extra !== undefined) parts.push(extra);
  let out = '';
  for (const p of parts) out += /^[0-9]+$/.test(p) ? `[${p}]` : out === '' ? p : `.${p}`;
  return out === '' ? '(config)' : out;
}

function valueAt(root: unknown, instancePath: string): unknown {
  let v: unknown = root;
  for (const p of instancePath.split('/').filter((x) => x !== '')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

function schemaError(e: SchemaError, root: unknown): EvenlbError {
  const received = valueAt(root, e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return configError(fieldName(e.instancePath, String(p.missingProperty)), 'is required');
    case 'additionalProperties':
      return configError(fieldName(e.instancePath, String(p.additionalProperty)), 'is not a known field');
    case 'enum':
      return configError(
        fieldName(e.instancePath),
        `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
        received,
      );
    case 'pattern': {
      const f = fieldName(e.instancePath);
      const what = /address$/i.test(f)
        ? 'must be HOST:PORT (IPv6 as [::1]:PORT)'
        : /target$/.test(f)
          ? 'must be a target URI: static:///IP:PORT[,...], dns:///HOST:PORT, k8s:///NAME.NAMESPACE:PORT or file:///PATH'
          : `must match ${String(p.pattern)}`;
      return configError(f, what, received);
    }
    default:
      return configError(fieldName(e.instancePath), e.message ?? 'is invalid', received);
  }
}

interface RawConfig {
  admin?: { address: string; metricsAddress?: string };
  accessLog?: boolean;
  logLevel?: ProxyConfig['logLevel'];
  imbalanceWindowMs?: number;
  drainTimeoutMs?: number;
  listeners: (Partial<Omit<ListenerConfig, 'limits'>> & { address: string; limits?: Partial<ListenerLimits> })[];
  clusters: (Record<string, unknown> & { name: string; target: string; protocol?: ClusterConfig['protocol'] })[];
  routes?: (Partial<RouteConfig> & { cluster: string })[];
}

/**
 * Validates a parsed configuration object and fills defaults.
 *
 * @example
 * normalizeProxyConfig({ listeners: [{ address: '127.0.0.1:8080' }],
 *   clusters: [{ name: 'web', target: 'static:///127.0.0.1:9000' }] })
 */
export function normalizeProxyConfig(input: unknown): ProxyConfig {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw configError('(config)', 'must be a mapping with listeners and clusters', input);
  }
  // ajv's code for `proxyConfigSchema`, generated at build time (`npm run generate`; a test checks
  // it is current): a start does not compile the schema, which was a fifth of its CPU.
  if (!validateProxyConfig(input)) {
    const first = validateProxyConfig.errors?.[0];
    throw first === undefined ? configError('(config)', 'is invalid') : schemaError(first, input);
  }
  const raw = input as unknown as RawConfig;
  ensureBuiltinPolicies();
  const policies = registeredPolicies().map((p) => p.name);

  const clusters: ClusterConfig[] = raw.clusters.map((c, i) => {
    try {
      parseTarget(c.target);
    } catch (err) {
      throw configError(`clusters[${i}].target`, `is not a valid target URI: ${(err as Error).message}`);
    }
    // Shared fields get their defaults through the one table (cluster-config-fields.ts).
    const config = deepFreeze({ ...withClusterDefaults(c), protocol: c.protocol ?? 'http1' }) as ClusterConfig;
    if (!policies.includes(config.policy)) {
      throw configError(`clusters[${i}].policy`, `must be one of ${policies.join(', ')}`, config.policy);
    }
    if (config.tls?.ca !== undefined) readable(`clusters[${i}].tls.ca`, config.tls.ca);
    checkClusterConfig(`clusters[${i}]`, config);
    return config;
  });
  const clusterNames = new Set<string>();
  clusters.forEach((c, i) => {
    if (clusterNames.has(c.name)) throw configError(`clusters[${i}].name`, 'must be unique', c.name);
    clusterNames.add(c.name);
  });
  const knownCluster = (field: string, name: string): void => {
    if (!clusterNames.has(name))
      throw configError(field, `must name a cluster (${[...clusterNames].join(', ')})`, name);
  };

  const addresses = new Set<string>();
  const listeners: ListenerConfig[] = raw.listeners.map((l, i) => {
    const protocol = l.protocol ?? 'http';
    const at = `listeners[${i}]`;
    if (addresses.has(l.address)) throw configError(`${at}.address`, 'must be unique', l.address);
    if (!l.address.endsWith(':0')) addresses.add(l.address);
    if (parseAddress(l.address).port > 65535)
      throw configError(`${at}.address`, 'must have a port <= 65535', l.address);
    if (protocol === 'https') {
      if (l.tls === undefined) throw configError(`${at}.tls`, 'is required for protocol "https" (cert and key files)');
      readable(`${at}.tls.cert`, l.tls.cert);
      readable(`${at}.tls.key`, l.tls.key);
      l.tls.sni?.forEach((e, j) => {
        readable(`${at}.tls.sni[${j}].cert`, e.cert);
        readable(`${at}.tls.sni[${j}].key`, e.key);
      });
      if (l.tls.clientCa !== undefined) readable(`${at}.tls.clientCa`, l.tls.clientCa);
    } else if (l.tls !== undefined) {
      throw configError(`${at}.tls`, 'is only valid for protocol "https"');
    }
    if (protocol === 'tcp') {
      if (l.cluster === undefined) throw configError(`${at}.cluster`, 'is required for protocol "tcp"');
      knownCluster(`${at}.cluster`, l.cluster);
      const target = clusters.find((c) => c.name === l.cluster) as ClusterConfig;
      const kind = getPolicy(target.policy).kind;
      if ((l.balance ?? 'least-connections') === 'maglev' && kind !== 'hash') {
        throw configError(
          `${at}.balance`,
          `"maglev" needs cluster ${target.name} to use a hash policy such as "maglev" (its policy is "${target.policy}")`,
        );
      }
      if (l.balance === 'least-connections' && kind !== 'load') {
        throw configError(`${at}.balance`, `"least-connections" needs cluster ${target.name} to use a load policy`);
      }
      if (l.trustForwardedHeaders !== undefined)
        throw configError(`${at}.trustForwardedHeaders`, 'is only valid for protocol "http" or "https"');
    } else {
      for (const k of ['cluster', 'balance', 'maxConnectionAgeMs'] as const) {
        if (l[k] !== undefined) throw configError(`${at}.${k}`, 'is only valid for protocol "tcp"', l[k]);
      }
    }
    if (l.recycle?.fairShare !== undefined) checkFairShare(`${at}.recycle.fairShare`, l.recycle.fairShare, protocol);
    if (l.loadReport !== undefined)
      checkListenerLoadReport(`${at}.loadReport`, l.loadReport, protocol, l.recycle?.fairShare?.loadPort);
    return Object.freeze({
      name: l.name ?? `${protocol}-${i}`,
      address: l.address,
      protocol,
      ...(l.tls === undefined ? {} : { tls: Object.freeze({ ...l.tls }) }),
      ...(l.cluster === undefined ? {} : { cluster: l.cluster }),
      ...(protocol === 'tcp' ? { balance: l.balance ?? 'least-connections' } : {}),
      ...(l.maxConnectionAgeMs === undefined ? {} : { maxConnectionAgeMs: l.maxConnectionAgeMs }),
      limits: Object.freeze({ ...defaultListenerLimits, ...(l.limits ?? {}) }),
      ...(l.recycle === undefined
        ? {}
        : {
            recycle: Object.freeze({
              ...l.recycle,
              ...(l.recycle.fairShare === undefined ? {} : { fairShare: Object.freeze({ ...l.recycle.fairShare }) }),
            }),
          }),
      ...(l.loadReport === undefined ? {} : { loadReport: Object.freeze({ ...l.loadReport }) }),
      trustForwardedHeaders: l.trustForwardedHeaders ?? false,
    });
  });

  // Fair-share metrics are the recycler's (unlabelled, one set per process): one shedding listener.
  const shedding = listeners.filter((l) => l.recycle?.fairShare !== undefined);
  if (shedding.length > 1) {
    throw configError(
      `listeners[${listeners.indexOf(shedding[1] as ListenerConfig)}].recycle.fairShare`,
      `may be set on one listener only (already on listener "${(shedding[0] as ListenerConfig).name}")`,
    );
  }

  // Least-connections over TCP compares every endpoint (a full scan, not two random choices):
  // connections are few and long-lived, so each pick matters.
  for (const l of listeners) {
    if (l.protocol !== 'tcp' || l.balance !== 'least-connections') continue;
    const i = clusters.findIndex((c) => c.name === l.cluster);
    const c = clusters[i] as ClusterConfig;
    if (c.policy === 'least-request' && c.policyOptions === undefined) {
      clusters[i] = Object.freeze({ ...c, policyOptions: Object.freeze({ choiceCount: 64 }) });
    }
  }

  const hasL7 = listeners.some((l) => l.protocol !== 'tcp');
  const rawRoutes = raw.routes ?? [];
  if (hasL7 && rawRoutes.length === 0) {
    if (clusters.length !== 1) {
      throw configError('routes', 'is required when there are several clusters (which cluster serves which host?)');
    }
  }
  const routes: RouteConfig[] =
    rawRoutes.length === 0 && clusters[0] !== undefined
      ? [Object.freeze({ hosts: Object.freeze(['*']), pathPrefix: '/', cluster: clusters[0].name })]
      : rawRoutes.map((r, i) => {
          knownCluster(`routes[${i}].cluster`, r.cluster);
          return Object.freeze({
            hosts: Object.freeze((r.hosts ?? ['*']).map((h) => h.toLowerCase())),
            pathPrefix: r.pathPrefix ?? '/',
            cluster: r.cluster,
          });
        });

  const config: ProxyConfig = Object.freeze({
    ...(raw.admin === undefined ? {} : { admin: Object.freeze({ ...raw.admin }) }),
    accessLog: raw.accessLog ?? false,
    logLevel: raw.logLevel ?? 'info',
    imbalanceWindowMs: raw.imbalanceWindowMs ?? 10_000,
    drainTimeoutMs: raw.drainTimeoutMs ?? 30_000,
    listeners: Object.freeze(listeners),
    clusters: Object.freeze(clusters),
    routes: Object.freeze(routes),
  });
  // What must hold between fields (and with the machine) for every part to start.
  checkConstraints(input, config);
  return config;
}

function readable(field: string, path: string): void {
  try {
    readFileSync(path);
  } catch (err) {
    throw configError(field, `must name a readable file (${(err as NodeJS.ErrnoException).code ?? 'error'})`, path);
  }
}

/** Parses YAML (or JSON) text and validates it. */
export function parseProxyConfig(text: string, source = 'config'): ProxyConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    throw new EvenlbError(
      ErrorCodes.INVALID_CONFIG,
      `proxy config: ${source} is not valid YAML: ${(err as Error).message}`,
    );
  }
  return normalizeProxyConfig(doc);
}

/** Reads and validates a configuration file. */
export function loadProxyConfigFile(path: string): ProxyConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new EvenlbError(
      ErrorCodes.INVALID_CONFIG,
      `proxy config: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  return parseProxyConfig(text, path);
}

export interface ProxyFlags {
  readonly listen: string;
  readonly upstream: string;
  readonly policy?: string;
  readonly admin?: string;
  readonly protocol?: 'http1' | 'h2';
  readonly accessLog?: boolean;
}

/** The simple case: one `http` listener, one cluster, every host routed to it. */
export function configFromFlags(flags: ProxyFlags): ProxyConfig {
  return normalizeProxyConfig({
    ...(flags.admin === undefined ? {} : { admin: { address: flags.admin } }),
    ...(flags.accessLog === undefined ? {} : { accessLog: flags.accessLog }),
    listeners: [{ name: 'default', address: flags.listen, protocol: 'http' }],
    clusters: [
      {
        name: 'default',
        target: flags.upstream,
        ...(flags.policy === undefined ? {} : { policy: flags.policy }),
        ...(flags.protocol === undefined ? {} : { protocol: flags.protocol }),
      },
    ],
  });
}
