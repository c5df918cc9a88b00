/**
 * The server-side sidecar in a few settings: "listen on :P, forward to the app on 127.0.0.1:Q,
 * shed by fair share among the pods of Service S". One options spec (`sidecarSpec`) serves the
 * `evenlb proxy --sidecar` flags and the short YAML form (a document with one `sidecar:`
 * mapping); `sidecarProxyConfig` turns the options into an ordinary, validated `ProxyConfig` —
 * one `http` (HTTP/1.1 + h2c) or `https` (TLS, ALPN h2 and http/1.1) listener named `sidecar`
 * whose `recycle.fairShare` sheds by fair share with the peers target (and, with `loadReport`,
 * reports the app's load, probes answered on the same load port), and one cluster named
 * `app` holding the app's one local endpoint over a small keep-alive pool — plus the app's
 * address and the readiness check (`AppHealth`) that gates `/readyz`.
 *
 * Choices a sidecar makes for the app, and why: round-robin over the one endpoint (nothing to
 * pick), no outlier detection (ejecting the only endpoint helps nobody), no re-sending of
 * requests the app answered with 502/503/504 (the app's answer is the answer), at most
 * `appConnections` sockets to the app. Forwarding headers follow the proxy's trust model
 * (`trustForwardedHeaders`, default off): the app sees the client's address in
 * `X-Forwarded-For`.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parse as parseYaml } from 'yaml';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { type Input, opt, type Parsed, parseOptions } from '../../core/options.js';
import { parseTarget } from '../../core/target.js';
import { fairShareSpec } from '../../server/fair-share/fair-share-options.js';
import type { ProxyConfig } from '../config/config-schema.js';
import { listenerLoadReportSpec } from '../config/listener-load-report.js';
import { normalizeProxyConfig } from '../config/proxy-config.js';
import { type AppCheckSettings, type AppEndpoint, appCheckSpec } from './app-health.js';

const COMPONENT = 'sidecar';
/** The listener's and the cluster's names in the built configuration (metrics labels, `/config`). */
export const SIDECAR_LISTENER = 'sidecar';
export const SIDECAR_CLUSTER = 'app';

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/]+):([0-9]{1,5})$/;
const isPortNumber = (n: number): boolean => Number.isInteger(n) && n >= 1 && n <= 65535;

/**
 * `:8080` → `0.0.0.0:8080`; `HOST:PORT` as given (port 0: any free port). Undefined when it is neither.
 *
 * @example
 * listenAddress(':8443'); // '0.0.0.0:8443'
 */
export function listenAddress(value: string): string | undefined {
  const v = /^:[0-9]{1,5}$/.test(value) ? `0.0.0.0${value}` : value;
  const m = HOST_PORT.exec(v);
  return m === null || Number(m[2]) > 65535 ? undefined : v;
}

const APP_SCHEMES = {
  http: { protocol: 'http1', tls: false },
  https: { protocol: 'http1', tls: true },
  h2c: { protocol: 'h2', tls: false },
  h2: { protocol: 'h2', tls: true },
} as const;

/** Where and how the app listens, from `--app`. */
export interface AppAddress {
  readonly host: string;
  readonly port: number;
  readonly protocol: 'http1' | 'h2';
  readonly tls: boolean;
}

/**
 * Parses the app's address: `HOST:PORT` (HTTP/1.1), or `http://`, `https://`, `h2c://` (HTTP/2
 * cleartext, gRPC) or `h2://` (HTTP/2 over TLS) followed by `HOST:PORT`. `localhost` is
 * 127.0.0.1. Undefined when malformed.
 *
 * @example
 * parseAppAddress('h2c://127.0.0.1:50051'); // { host: '127.0.0.1', port: 50051, protocol: 'h2', tls: false }
 */
export function parseAppAddress(value: string): AppAddress | undefined {
  const m = /^([a-z0-9]+):\/\/(.*)$/.exec(value);
  const scheme = m === null ? 'http' : m[1];
  const rest = m === null ? value : (m[2] as string);
  if (!Object.hasOwn(APP_SCHEMES, scheme as string)) return undefined;
  const hp = HOST_PORT.exec(rest.replace(/\/$/, ''));
  if (hp === null || !isPortNumber(Number(hp[2]))) return undefined;
  let host = (hp[1] as string).replace(/^\[(.*)\]$/, '$1');
  if (host === 'localhost') host = '127.0.0.1';
  if (isIP(host) === 0) return undefined;
  return { host, port: Number(hp[2]), ...APP_SCHEMES[scheme as keyof typeof APP_SCHEMES] };
}

const isListen = (v: unknown): v is string => typeof v === 'string' && listenAddress(v) !== undefined;
const isApp = (v: unknown): v is string => typeof v === 'string' && parseAppAddress(v) !== undefined;
const isTarget = (v: unknown): v is string => {
  if (typeof v !== 'string') return false;
  try {
    parseTarget(v);
    return true;
  } catch {
    return false;
  }
};
const isAddress = (v: unknown): v is string => typeof v === 'string' && HOST_PORT.test(v);

/** `fairShare` in the sidecar: the recycler's options but the peers, the exchange's port and this pod's address, which are the sidecar's own fields. */
const {
  peers: _peers,
  loadPort: _loadPort,
  loadHost: _loadHost,
  self: _self,
  logger: _logger,
  ...sidecarFairShareSpec
} = fairShareSpec;

/** `loadReport` in the sidecar: the listener's, its probes answered on the sidecar's `loadPort` (beside the fair-share report). */
const { loadPort: _reportPort, loadHost: _reportHost, ...sidecarLoadReportSpec } = listenerLoadReportSpec;

export const sidecarSpec = {
  /** Where clients connect (the Service's targetPort): `HOST:PORT`, or `:PORT` for every IPv4 interface. */
  listen: opt.custom('HOST:PORT or :PORT (e.g. ":8443", "0.0.0.0:8443", "[::]:8443")', isListen),
  /**
   * The app in the same pod: `HOST:PORT` (HTTP/1.1), or `http://`, `https://`, `h2c://` (HTTP/2
   * cleartext: gRPC) or `h2://` (HTTP/2 over TLS) before it; usually on 127.0.0.1.
   */
  app: opt.custom('HOST:PORT, or http://, https://, h2c:// or h2:// and HOST:PORT (an IP or localhost)', isApp),
  /** The Service's endpoints (the peer sidecars): a target URI, usually `k8s:///NAME.NAMESPACE:PORT`. */
  peers: opt.custom('a target URI (k8s:///NAME.NAMESPACE:PORT, file:///, static:///, dns:///)', isTarget),
  /** Port of the load exchange between sidecars (plain HTTP; open it to the other pods of the Service only). */
  loadPort: opt.int({ min: 1, max: 65535, default: 9903 }),
  /** Address the load exchange binds; default every interface. */
  loadHost: opt.string({ nonEmpty: true, optional: true }),
  /** This pod's IP as the Service's endpoints list it; default the `POD_IP` environment variable. */
  self: opt.string({ nonEmpty: true, optional: true }),
  /** Serve TLS to clients (ALPN h2 and http/1.1) with these PEM files: the app's own certificate. */
  tls: opt.object(
    {
      cert: opt.string({ nonEmpty: true }),
      key: opt.string({ nonEmpty: true }),
      /** Require client certificates signed by this CA (mutual TLS). */
      clientCa: opt.string({ nonEmpty: true, optional: true }),
    },
    { optional: true },
  ),
  /** For an app serving TLS (`https://`, `h2://`): the CA to verify it with and the name its certificate carries; without `ca` the local hop is not verified. */
  appTls: opt.object(
    {
      ca: opt.string({ nonEmpty: true, optional: true }),
      servername: opt.string({ nonEmpty: true, optional: true }),
    },
    { optional: true },
  ),
  /** The readiness check of the app (`/readyz` fails while it fails). */
  appCheck: opt.object(appCheckSpec),
  /** Most keep-alive sockets to the app (HTTP/1.1); requests beyond wait in order. */
  appConnections: opt.int({ min: 1, max: 10_000, default: 64 }),
  /** Fair-share options of the recycler (`tolerance`, `periodMs`, `loadMetric`, `windowMs`, ...; docs/recycler.md). */
  fairShare: opt.object(sidecarFairShareSpec),
  /**
   * Report the app's load (`endpoint-load-metrics` on responses, `inFlight`/`latencyMs` to probes
   * on `loadPort`): the listener's `loadReport` options (docs/proxy.md); unset: no reports.
   */
  loadReport: opt.object(sidecarLoadReportSpec, { optional: true }),
  /** Also close client connections after this many requests (the recycler's limit). */
  maxRequestsPerConnection: opt.int({ min: 1, optional: true }),
  /** Also close client connections at this age, ms (±10% jitter). */
  maxConnectionAgeMs: opt.number({ min: 1, optional: true }),
  /** Trust clients' forwarding headers (only behind a proxy you control). */
  trustForwardedHeaders: opt.boolean({ default: false }),
  /** The full admin listener (dashboard, /config, /metrics, probes); keep it on loopback. */
  admin: opt.custom('HOST:PORT', isAddress, { default: '127.0.0.1:9901' }),
  /** A second admin listener with only /metrics, /healthz and /readyz, for the kubelet and Prometheus (the pod IP). */
  metrics: opt.custom('HOST:PORT or :PORT', isListen, { optional: true }),
  /** How long SIGTERM waits for in-flight requests, ms. */
  drainTimeoutMs: opt.int({ min: 0, default: 20_000 }),
  accessLog: opt.boolean({ default: false }),
  logLevel: opt.oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, { default: 'info' }),
};

export type SidecarOptions = Parsed<typeof sidecarSpec>;
/** What the sidecar accepts (flags and the YAML form), derived from `sidecarSpec`. */
export interface SidecarInput extends Readonly<Input<typeof sidecarSpec>> {}

/** A sidecar ready to start: the proxy configuration, the app and its readiness check. */
export interface SidecarSetup {
  readonly options: SidecarOptions;
  readonly config: ProxyConfig;
  readonly app: AppEndpoint;
  readonly appCheck: AppCheckSettings;
}

/**
 * Validates sidecar options; errors name the field (`sidecar: option "appCheck.intervalMs" ...`).
 *
 * @example
 * parseSidecarOptions({ listen: ':8080', app: '127.0.0.1:8081', peers: 'k8s:///web.shop:80' }).loadPort; // 9903
 */
export function parseSidecarOptions(input: unknown): SidecarOptions {
  return parseOptions(COMPONENT, input, sidecarSpec);
}

/** `value` without its undefined fields (what a file would leave out). */
function definedOnly(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}

function readPem(field: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `${COMPONENT}: option "${field}" must name a readable file (${(err as NodeJS.ErrnoException).code ?? 'error'}); received ${JSON.stringify(path)}`,
      { details: { component: COMPONENT, field } },
    );
  }
}

/**
 * Builds the proxy configuration (validated like a file) and the app's readiness check.
 *
 * @example
 * const { config } = sidecarSetup(parseSidecarOptions({ listen: ':8080', app: '127.0.0.1:8081', peers: 'k8s:///web.shop:80' }));
 * config.listeners[0].recycle.fairShare.peers; // 'k8s:///web.shop:80'
 */
export function sidecarSetup(options: SidecarOptions): SidecarSetup {
  const app = parseAppAddress(options.app) as AppAddress;
  if (!app.tls && options.appTls !== undefined) {
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `${COMPONENT}: option "appTls" is only valid for an app serving TLS (app https:// or h2://); received app ${JSON.stringify(options.app)}`,
      { details: { component: COMPONENT, field: 'appTls' } },
    );
  }
  const appCa = options.appTls?.ca;
  const ca = appCa === undefined ? undefined : readPem('appTls.ca', appCa);
  const servername = options.appTls?.servername;
  const appHost = app.host.includes(':') ? `[${app.host}]` : app.host;
  const fairShare = definedOnly({
    ...options.fairShare,
    peers: options.peers,
    loadPort: options.loadPort,
    loadHost: options.loadHost,
    self: options.self,
  });
  const raw = {
    admin: {
      address: options.admin,
      ...(options.metrics === undefined ? {} : { metricsAddress: listenAddress(options.metrics) }),
    },
    accessLog: options.accessLog,
    logLevel: options.logLevel,
    drainTimeoutMs: options.drainTimeoutMs,
    listeners: [
      {
        name: SIDECAR_LISTENER,
        address: listenAddress(options.listen),
        protocol: options.tls === undefined ? 'http' : 'https',
        ...(options.tls === undefined
          ? {}
          : {
              tls: {
                cert: options.tls.cert,
                key: options.tls.key,
                ...(options.tls.clientCa === undefined ? {} : { clientCa: options.tls.clientCa }),
              },
            }),
        recycle: {
          ...(options.maxRequestsPerConnection === undefined
            ? {}
            : { maxRequestsPerConnection: options.maxRequestsPerConnection }),
          ...(options.maxConnectionAgeMs === undefined ? {} : { maxConnectionAgeMs: options.maxConnectionAgeMs }),
          fairShare,
        },
        ...(options.loadReport === undefined ? {} : { loadReport: definedOnly({ ...options.loadReport }) }),
        trustForwardedHeaders: options.trustForwardedHeaders,
      },
    ],
    clusters: [
      {
        name: SIDECAR_CLUSTER,
        target: `static:///${appHost}:${app.port}`,
        protocol: app.protocol,
        policy: 'round-robin',
        outlierDetection: false,
        retries: { idempotent: 0 },
        ...(app.protocol === 'http1' ? { connectionsPerEndpoint: options.appConnections } : {}),
        ...(app.tls
          ? {
              tls: {
                rejectUnauthorized: appCa !== undefined,
                ...(appCa === undefined ? {} : { ca: appCa }),
                ...(servername === undefined ? {} : { servername }),
              },
            }
          : {}),
      },
    ],
  };
  const config = normalizeProxyConfig(raw);
  return {
    options,
    config,
    app: {
      host: app.host,
      port: app.port,
      protocol: app.protocol,
      ...(app.tls ? { tls: { rejectUnauthorized: ca !== undefined, ca, servername } } : {}),
    },
    appCheck: options.appCheck,
  };
}

/**
 * Reads the short YAML form: a document holding one `sidecar:` mapping of `sidecarSpec`'s
 * fields. Errors are `EVENLB_INVALID_CONFIG` naming the file and the field.
 *
 * @example
 * // sidecar.yaml:  sidecar: { listen: ":8443", app: "https://127.0.0.1:9443", peers: "k8s:///policy.policy:443" }
 * loadSidecarConfigFile('sidecar.yaml').config.listeners[0].name; // 'sidecar'
 */
export function loadSidecarConfigFile(path: string): SidecarSetup {
  const fail = (message: string, field?: string): never => {
    throw new EvenlbError(ErrorCodes.INVALID_CONFIG, `sidecar config ${path}: ${message}`, {
      details: field === undefined ? {} : { field },
    });
  };
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'), { prettyErrors: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return fail(code === undefined ? `not valid YAML: ${(err as Error).message}` : `cannot read (${code})`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc) || !Object.hasOwn(doc, 'sidecar'))
    return fail('must be a mapping with one key, "sidecar" (listen, app, peers, ...)');
  const extra = Object.keys(doc).filter((k) => k !== 'sidecar');
  if (extra.length > 0) return fail(`"${extra[0]}" is not a known field (only "sidecar")`, extra[0]);
  try {
    return sidecarSetup(parseSidecarOptions((doc as { sidecar: unknown }).sidecar));
  } catch (err) {
    if (!(err instanceof EvenlbError)) throw err;
    const field = (err.details as { field?: unknown } | undefined)?.field;
    return fail(
      err.message.replace(/^sidecar: /, ''),
      typeof field === 'string' ? `sidecar.${field.replace(/^sidecar\./, '')}` : undefined,
    );
  }
}
