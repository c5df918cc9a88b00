/**
 * `createWebhookClient`: calls an admission webhook the way kube-apiserver does with
 * `--enable-aggregator-routing=true` and `WebhookRoundTripLoadBalancing` on. From a
 * `WebhookClientConfig`:
 *
 * - `service: { namespace, name, port = 443, path }` → every call picks an endpoint of the
 *   Service and POSTs to `podIP:targetPort`, with `Host: <name>.<namespace>.svc:<port>` and TLS
 *   server name `<name>.<namespace>.svc`, offering http/1.1 only. Endpoints come from
 *   `k8s:///<name>.<namespace>:<port>` unless `options.endpoints` names another source (tests,
 *   non-Kubernetes setups).
 * - `url: https://...` → a plain client to that URL; h2 is offered only for loopback hosts.
 *
 * `caBundle` is the base64 PEM bundle from the API object. Each call has a timeout (default
 * 10 s, kube's default `timeoutSeconds`) and fails with `EVENLB_TIMEOUT`; a non-2xx answer or a
 * body that is not an AdmissionReview for the same `uid` fails with `EVENLB_WEBHOOK_FAILED`.
 * `featureGates: 'RoundTripLoadBalancing=false'` gives the legacy, host-keyed behaviour.
 *
 * @example
 * const client = createWebhookClient(
 *   { service: { namespace: 'policy', name: 'webhook', path: '/validate' }, caBundle },
 * );
 * const answer = await client.call({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request });
 */
import { isIP } from 'node:net';
import { Agent, type Dispatcher, request } from 'undici';
import { isEndpointSource } from '../cluster/cluster-options.js';
import { type Clock, systemClock } from '../core/clock.js';
import { describeValue, ErrorCodes, EvenlbError } from '../core/errors.js';
import { type Input, opt, optionError, parseOptions } from '../core/options.js';
import { Shutdown } from '../core/shutdown.js';
import type { EndpointSource } from '../discovery/endpoint-source.js';
import { BalancedAgent } from './balanced-agent.js';
import { type RoutingOptions, type RoutingStats, routingSpec } from './client-routes.js';

/** The `clientConfig` of a Validating/MutatingWebhookConfiguration entry. */
export interface WebhookClientConfig {
  service?: { namespace: string; name: string; path?: string; port?: number };
  url?: string;
  /** Base64-encoded PEM CA bundle; default: the system roots. */
  caBundle?: string;
}

export interface WebhookCallOptions {
  /** Overrides the client's timeout for this call (ms). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface WebhookClient {
  /** The URL calls go to (`https://<name>.<namespace>.svc:<port><path>` for services). */
  readonly url: string;
  /** POSTs an AdmissionReview and resolves with the webhook's AdmissionReview. */
  call<T = unknown>(review: unknown, options?: WebhookCallOptions): Promise<T>;
  /** Balancing stats (service webhooks; empty routes for URL webhooks). */
  stats(): RoutingStats;
  /**
   * Graceful: later calls fail with `EVENLB_CLOSED`, calls in flight finish, then sockets close.
   * Always settles; idempotent.
   */
  close(): Promise<void>;
  /** Abrupt: calls in flight fail, sockets are destroyed; also settles a pending `close()`. Idempotent. */
  destroy(err?: Error): Promise<void>;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/**
 * The routing options less what the webhook's `clientConfig` decides: its one route
 * (`routes`, `kubernetes`) and the protocol (http/1.1 only, as kube-apiserver offers).
 */
const { routes: _routes, kubernetes: _kubernetes, allowH2: _allowH2, ...webhookRoutingSpec } = routingSpec;

/** The spec of `WebhookClientOptions`. */
const webhookOptionsSpec = {
  ...webhookRoutingSpec,
  /** Per-call timeout in ms; default 10 000. */
  timeoutMs: opt.number({ min: 0, exclusiveMin: true, default: 10_000 }),
  /** Where the Service's endpoints come from instead of `k8s:///` (a target URI or an EndpointSource). */
  endpoints: opt.custom<string | EndpointSource, { optional: true }>(
    'a target URI or an EndpointSource',
    (v): v is string | EndpointSource => typeof v === 'string' || isEndpointSource(v),
    { optional: true },
  ),
};

/**
 * Options of `createWebhookClient(config, options)`, derived from `webhookOptionsSpec`: the
 * `RoutingOptions` fields but `routes`, `kubernetes` and `allowH2`, plus `timeoutMs` and
 * `endpoints` (each field's meaning and default is the TSDoc of its spec entry).
 */
export interface WebhookClientOptions extends Input<typeof webhookOptionsSpec> {}

function configError(field: string, expected: string, received: unknown): EvenlbError {
  return optionError('WebhookClientConfig', field, expected, received);
}

function decodeCaBundle(caBundle: unknown): string | undefined {
  if (caBundle === undefined || caBundle === '') return undefined;
  if (typeof caBundle !== 'string') throw configError('caBundle', 'base64-encoded PEM text', caBundle);
  const pem = Buffer.from(caBundle, 'base64').toString('utf8');
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw configError('caBundle', 'base64-encoded PEM certificates', `${caBundle.slice(0, 20)}...`);
  }
  return pem;
}

function isLoopback(hostname: string): boolean {
  const h = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '::1';
}

/**
 * A client for one webhook's `clientConfig`.
 *
 * @example
 * const client = createWebhookClient({ service: { namespace: 'default', name: 'test-service', path: '/validate' },
 *   caBundle }, { endpoints: 'static:///127.0.0.2:9443,127.0.0.3:9443' });
 */
export function createWebhookClient(config: WebhookClientConfig, options: WebhookClientOptions = {}): WebhookClient {
  if (typeof config !== 'object' || config === null) throw configError('(config)', 'an object', config);
  const o = parseOptions('createWebhookClient', options, webhookOptionsSpec);
  const clock: Clock = o.clock ?? systemClock;
  const ca = decodeCaBundle(config.caBundle);
  if ((config.service === undefined) === (config.url === undefined)) {
    throw configError('(config)', 'exactly one of "service" or "url"', config);
  }
  let url: string;
  let dispatcher: Dispatcher;
  let stats: () => RoutingStats;
  let hostHeader: string | undefined;
  if (config.service !== undefined) {
    const svc = config.service;
    if (!DNS_LABEL.test(String(svc.name))) throw configError('service.name', 'a DNS label', svc.name);
    if (!DNS_LABEL.test(String(svc.namespace))) throw configError('service.namespace', 'a DNS label', svc.namespace);
    const port = svc.port ?? 443;
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw configError('service.port', 'an integer between 1 and 65535', port);
    }
    const path = svc.path ?? '/';
    if (typeof path !== 'string' || !path.startsWith('/'))
      throw configError('service.path', 'a path starting with "/"', path);
    const serverName = `${svc.name}.${svc.namespace}.svc`;
    hostHeader = `${serverName}:${port}`;
    url = `https://${hostHeader}${path}`;
    const { timeoutMs: _t, endpoints, ...routing } = o;
    const agent = new BalancedAgent({
      ...(routing as RoutingOptions),
      allowH2: false,
      tls: { ...(o.tls ?? {}), ...(ca === undefined ? {} : { ca }), servername: serverName },
      routes: { [hostHeader]: endpoints ?? `k8s:///${svc.name}.${svc.namespace}:${port}` },
    });
    dispatcher = agent;
    stats = () => agent.stats();
  } else {
    let parsed: URL;
    try {
      parsed = new URL(String(config.url));
    } catch {
      throw configError('url', 'an absolute https:// URL', config.url);
    }
    if (parsed.protocol !== 'https:') throw configError('url', 'an https:// URL', config.url);
    url = parsed.href;
    dispatcher = new Agent({
      allowH2: isLoopback(parsed.hostname),
      connect: { ...(ca === undefined ? {} : { ca }), timeout: o.connectTimeoutMs },
    });
    stats = () => ({ name: o.name, routes: [] });
  }

  const shutdown = new Shutdown();
  /** Calls in flight; `destroy()` aborts them (undici's h2 sessions do not fail open streams on destroy). */
  const inFlight = new Set<AbortController>();
  return {
    url,
    stats,
    close: () => shutdown.close(() => dispatcher.close()),
    destroy: (err?: Error) =>
      shutdown.destroy(() => {
        const error = err ?? new EvenlbError(ErrorCodes.CLOSED, `webhook client for ${url} was destroyed`);
        for (const c of inFlight) c.abort(error);
        return dispatcher.destroy(error);
      }),
    async call<T>(review: unknown, callOptions: WebhookCallOptions = {}): Promise<T> {
      if (shutdown.closed) throw new EvenlbError(ErrorCodes.CLOSED, `webhook client for ${url} is closed`);
      const timeoutMs = callOptions.timeoutMs ?? o.timeoutMs;
      const controller = new AbortController();
      inFlight.add(controller);
      const timer = clock.setTimeout(
        () =>
          controller.abort(
            new EvenlbError(ErrorCodes.TIMEOUT, `webhook ${url}: no answer within ${timeoutMs} ms`, {
              details: { url, timeoutMs },
            }),
          ),
        timeoutMs,
      );
      const onAbort = () => controller.abort(callOptions.signal?.reason);
      callOptions.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const res = await request(url, {
          dispatcher,
          method: 'POST',
          headers: {
            ...(hostHeader === undefined ? {} : { host: hostHeader }),
            'content-type': 'application/json',
            accept: 'application/json, */*',
          },
          body: JSON.stringify(review),
          signal: controller.signal,
        });
        const text = await res.body.text();
        if (res.statusCode < 200 || res.statusCode > 299) {
          throw new EvenlbError(
            ErrorCodes.WEBHOOK_FAILED,
            `webhook ${url} answered ${res.statusCode}: ${text.slice(0, 200)}`,
            { details: { url, status: res.statusCode } },
          );
        }
        let answer: unknown;
        try {
          answer = JSON.parse(text);
        } catch (err) {
          throw new EvenlbError(ErrorCodes.WEBHOOK_FAILED, `webhook ${url} answered with invalid JSON`, {
            cause: err,
            details: { url },
          });
        }
        checkAnswer(url, review, answer);
        return answer as T;
      } catch (err) {
        if (controller.signal.aborted && controller.signal.reason instanceof EvenlbError)
          throw controller.signal.reason;
        throw err;
      } finally {
        inFlight.delete(controller);
        timer.cancel();
        callOptions.signal?.removeEventListener('abort', onAbort);
      }
    },
  };
}

/** The answer must be an AdmissionReview whose `response.uid` echoes the request's `uid`. */
function checkAnswer(url: string, review: unknown, answer: unknown): void {
  const fail = (why: string) =>
    new EvenlbError(ErrorCodes.WEBHOOK_FAILED, `webhook ${url}: ${why}`, { details: { url } });
  if (typeof answer !== 'object' || answer === null) throw fail(`answer is ${describeValue(answer)}, not an object`);
  const a = answer as { kind?: unknown; response?: { uid?: unknown } };
  if (a.kind !== 'AdmissionReview') throw fail(`answer kind is ${describeValue(a.kind)}, expected "AdmissionReview"`);
  if (typeof a.response !== 'object' || a.response === null) throw fail('answer has no "response"');
  const uid = (review as { request?: { uid?: unknown } } | null)?.request?.uid;
  if (uid !== undefined && a.response.uid !== uid) {
    throw fail(`response.uid ${describeValue(a.response.uid)} does not match request.uid ${describeValue(uid)}`);
  }
}
