/**
 * `createHttpAgent`: a `node:http` / `node:https` Agent that balances per request the way the
 * `BalancedAgent` does, for libraries built on Node's core HTTP client. In Node's Agent the
 * pool key is `getName(options)` (`host:port:...`) — keyed by the Service name, that is the very
 * bug kube-apiserver had. Here `addRequest` picks an endpoint for every routed request and
 * hands the Agent `host: <endpoint ip>`, so the pool is keyed per endpoint; the `Host` header
 * (set by `ClientRequest` before the agent sees the request) and the TLS `servername` stay the
 * Service name. With `RoundTripLoadBalancing=false` the Agent keeps its host-keyed pool and
 * the endpoint is chosen in `createConnection`, only when a socket is dialled.
 *
 * Connection limits: `maxRequestsPerConnection` and `maxConnectionAgeMs` are enforced on the
 * socket's `'free'` event (our listener runs first and destroys the socket before the Agent
 * reuses it, even for queued requests); `idleTimeoutMs` is the Agent's free-socket timeout;
 * `connectionsPerEndpoint` is the Agent's `maxSockets` (per pool key, i.e. per endpoint).
 * When an endpoint leaves the eligible set its free sockets are destroyed at once and busy
 * ones when their request ends. Not done here: retries (a `ClientRequest` cannot be replayed
 * by its agent) — connect failures still count for outlier detection. Each response's status
 * (pushback) and, when the policy reads them, its load report go to the cluster with the
 * attempt's end; probes (`loadProbes`) are the cluster's own.
 *
 * @example
 * const agent = createHttpAgent({ protocol: 'https:', routes: { 'webhook.policy.svc:443': 'k8s:///webhook.policy:443' },
 *   tls: { ca } });
 * https.request('https://webhook.policy.svc/validate', { agent, method: 'POST' }, onResponse).end(body);
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Attempt } from '../cluster/attempt.js';
import type { Cluster } from '../cluster/cluster.js';
import { clusterInternals } from '../cluster/cluster-internals.js';
import type { RequestOutcome } from '../cluster/cluster-options.js';
import { type AttemptResponse, httpAttemptResponse } from '../cluster/load-feedback.js';
import { classifyFailure, outcomeOf } from '../cluster/retry-policy.js';
import { systemClock } from '../core/clock.js';
import type { Endpoint } from '../core/endpoint.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { hostPortKey } from '../core/host.js';
import { type Input, opt, parseOptions } from '../core/options.js';
import { createRandom } from '../core/random.js';
import { Shutdown } from '../core/shutdown.js';
import { LifetimePolicy } from '../pool/lifetime-policy.js';
import { ClientRoutes, type RoutingStats, routingSpec } from './client-routes.js';

/** The Agent `createHttpAgent` returns. */
export interface BalancedHttpAgent extends http.Agent {
  /** Stats per route (connections are this agent's sockets). */
  stats(): RoutingStats;
  /**
   * Graceful: new requests fail with `EVENLB_CLOSED`, free sockets close now, busy ones when
   * their response ends; resolves once this agent's routed sockets are closed. Idempotent.
   */
  close(): Promise<void>;
  /**
   * Abrupt: every socket is destroyed (requests in flight fail with `err`), routes stop; also
   * settles a pending `close()`. Idempotent. (Node's `Agent#destroy()`, made to keep the contract.)
   */
  destroy(err?: Error): Promise<void>;
}

const kMeta = Symbol('evenlb.meta');
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The spec of `BalancedHttpAgentOptions`: the routing options, the protocol and the Agent's own options. */
const httpAgentSpec = {
  ...routingSpec,
  /** `http:` (an `http.Agent`) or `https:` (an `https.Agent`); default `http:`. */
  protocol: opt.oneOf(['http:', 'https:'] as const, { default: 'http:' }),
  /** Other `http.Agent` options (`maxTotalSockets`, `scheduling`...); `keepAlive` defaults to true. */
  agentOptions: opt.custom<http.AgentOptions, { optional: true }>('http.Agent options', isObject, { optional: true }),
};

/**
 * Options of `createHttpAgent(...)`, derived from `httpAgentSpec`: every `RoutingOptions` field,
 * `protocol` and `agentOptions` (each field's meaning and default is the TSDoc of its spec entry).
 */
export interface BalancedHttpAgentOptions extends Input<typeof httpAgentSpec> {}

/** Agent methods Node has at run time that @types/node leaves out. */
interface AgentInternals {
  addRequest(this: http.Agent, req: http.ClientRequest, options: object): void;
  createConnection(this: http.Agent, options: object): Socket;
}

interface RouteMeta {
  readonly cluster: Cluster;
  /** The Service host name (TLS server name). */
  readonly serviceHost: string;
  /** Round-trip mode: the endpoint picked for the request that opens the socket. */
  readonly endpoint?: Endpoint;
}

interface TrackedSocket extends Socket {
  [kMeta]?: {
    cluster: Cluster;
    endpoint: Endpoint | undefined;
    requests: number;
    openedAtMs: number;
    maxAgeMs: number | undefined;
    retire: boolean;
  };
  _httpMessage?: unknown;
}

type AgentOptionsWithMeta = http.ClientRequestArgs & { [kMeta]?: RouteMeta; servername?: string };

/**
 * Creates a balancing `http.Agent` (or `https.Agent` with `protocol: 'https:'`).
 *
 * @example
 * const agent = createHttpAgent({ routes: { 'api.prod.svc:80': 'dns:///api-headless.prod.svc.cluster.local:8080' } });
 * http.get('http://api.prod.svc/healthz', { agent }, (res) => res.resume());
 */
export function createHttpAgent(options: BalancedHttpAgentOptions = {}): BalancedHttpAgent {
  const o = parseOptions('createHttpAgent', options, httpAgentSpec);
  const secure = o.protocol === 'https:';
  const Base = (secure ? https.Agent : http.Agent) as typeof http.Agent;
  const defaultPort = secure ? 443 : 80;
  const lifetime = new LifetimePolicy(
    {
      maxRequestsPerConnection: o.maxRequestsPerConnection,
      maxConnectionAgeMs: o.maxConnectionAgeMs,
      ageJitter: o.ageJitter,
      idleTimeoutMs: o.idleTimeoutMs,
    },
    o.random ?? createRandom(),
    'createHttpAgent',
  );
  const clock = o.clock ?? systemClock;
  const clockNow = () => clock.now();

  class Agent extends Base implements BalancedHttpAgent {
    readonly #routes: ClientRoutes;
    readonly #sockets = new Map<Cluster, Set<TrackedSocket>>();
    readonly #watched = new Set<Cluster>();
    readonly name: string;
    readonly #shutdown = new Shutdown();

    constructor() {
      super({
        keepAlive: true,
        ...(o.connectionsPerEndpoint === undefined ? {} : { maxSockets: o.connectionsPerEndpoint }),
        ...(o.idleTimeoutMs === undefined ? {} : { timeout: o.idleTimeoutMs }),
        ...(o.agentOptions ?? {}),
      });
      this.#routes = new ClientRoutes(o, 'createHttpAgent', this);
      this.name = this.#routes.name;
    }

    stats(): RoutingStats {
      return this.#routes.stats();
    }

    close(): Promise<void> {
      return this.#shutdown.close(async () => {
        const open: Promise<unknown>[] = [];
        for (const set of this.#sockets.values()) {
          for (const s of set) {
            if (s.destroyed) continue;
            open.push(new Promise((resolve) => s.once('close', resolve)));
            if (!s._httpMessage) s.destroy();
          }
        }
        for (const list of Object.values(this.freeSockets)) for (const s of list ?? []) s.destroy();
        await Promise.all(open);
        await this.#routes.close(undefined, this);
      });
    }

    override destroy(err?: Error): Promise<void> {
      return this.#shutdown.destroy(async () => {
        const error = err ?? new EvenlbError(ErrorCodes.CLOSED, `http agent ${this.name} was destroyed`);
        const closed: Promise<unknown>[] = [];
        const all = new Set<Socket>();
        for (const set of this.#sockets.values()) for (const s of set) all.add(s);
        for (const list of Object.values(this.sockets)) for (const s of list ?? []) all.add(s);
        for (const list of Object.values(this.freeSockets)) for (const s of list ?? []) all.add(s);
        for (const s of all) {
          if (s.destroyed) continue;
          closed.push(new Promise((resolve) => s.once('close', resolve)));
          s.destroy(error);
        }
        super.destroy();
        await Promise.all([...closed, this.#routes.close(error, this)]);
      });
    }

    addRequest(req: http.ClientRequest, options: AgentOptionsWithMeta): void {
      if (this.#shutdown.closed) {
        failRequest(req, new EvenlbError(ErrorCodes.CLOSED, `http agent ${this.name} is closed`));
        return;
      }
      const host = String(options.hostname ?? options.host ?? 'localhost').toLowerCase();
      // The Service host as requested (TLS server name), and its route key.
      const bare = host.startsWith('[') ? host.slice(1, -1) : host;
      const key = hostPortKey(bare, Number(options.port ?? defaultPort));
      let cluster: Cluster | undefined;
      try {
        cluster = this.#routes.lookup(key);
      } catch (err) {
        failRequest(req, err as Error);
        return;
      }
      // Node's Agent#addRequest exists at run time but is not in @types/node.
      const superAdd = (opts: object) => (Base.prototype as unknown as AgentInternals).addRequest.call(this, req, opts);
      if (cluster === undefined) {
        superAdd(options);
        return;
      }
      this.#watch(cluster);
      const meta: RouteMeta = { cluster, serviceHost: bare };
      if (cluster.mode === 'legacy') {
        // Legacy: the pool stays keyed by the Service; the endpoint is chosen when dialling.
        req.once('socket', (s: Socket) => {
          const endpoint = (s as TrackedSocket)[kMeta]?.endpoint;
          const internals = clusterInternals(cluster);
          if (endpoint !== undefined) this.#account(req, internals.track(endpoint), internals.readsReports);
          else
            s.once('connect', () => {
              const e = (s as TrackedSocket)[kMeta]?.endpoint;
              if (e !== undefined) this.#account(req, internals.track(e), internals.readsReports);
            });
        });
        superAdd({ ...options, [kMeta]: meta });
        return;
      }
      const internals = clusterInternals(cluster);
      const ticket = internals.acquire();
      if (ticket instanceof EvenlbError) {
        if (ticket.code !== 'EVENLB_DISCOVERY_PENDING') {
          failRequest(req, ticket);
          return;
        }
        cluster.whenDiscovered().then(
          () => this.addRequest(req, options),
          (err: Error) => failRequest(req, err),
        );
        return;
      }
      this.#account(req, ticket, internals.readsReports);
      const ep = ticket.endpoint;
      const tlsOptions = this.#tlsOptions(cluster, bare);
      superAdd({
        ...options,
        host: ep.address,
        hostname: ep.address,
        port: ep.port,
        ...tlsOptions,
        [kMeta]: { ...meta, endpoint: ep },
      });
    }

    override createConnection(
      options: AgentOptionsWithMeta,
      callback?: (err: Error | null, s: Duplex) => void,
    ): Duplex {
      const meta = options[kMeta];
      // https.Agent#createConnection exists at run time but is not in @types/node.
      const baseCreate = (opts: object): Socket =>
        (Base.prototype as unknown as AgentInternals).createConnection.call(this, opts);
      if (meta === undefined) return baseCreate(options);
      const cluster = meta.cluster;
      let endpoint: Endpoint | undefined;
      let connectOptions: object = options;
      if (cluster.mode === 'legacy') {
        const picked = clusterInternals(cluster).pickForConnection();
        if (picked instanceof EvenlbError) {
          process.nextTick(() => callback?.(picked, undefined as unknown as Duplex));
          return undefined as unknown as Duplex;
        }
        endpoint = picked;
        connectOptions = {
          ...options,
          host: picked.address,
          hostname: picked.address,
          port: picked.port,
          ...this.#tlsOptions(cluster, meta.serviceHost),
        };
      } else {
        endpoint = meta.endpoint;
      }
      const socket = baseCreate(connectOptions) as TrackedSocket;
      socket[kMeta] = {
        cluster,
        endpoint,
        requests: 0,
        openedAtMs: clockNow(),
        maxAgeMs: lifetime.drawMaxAgeMs(),
        retire: false,
      };
      this.#track(cluster, socket);
      return socket;
    }

    #tlsOptions(cluster: Cluster, serviceHost: string): object {
      if (!secure) return {};
      const tls = cluster.options.tls;
      return {
        servername: tls?.servername ?? (isIP(serviceHost) === 0 ? serviceHost : undefined),
        ...(tls?.ca === undefined ? {} : { ca: tls.ca }),
        ...(tls?.cert === undefined ? {} : { cert: tls.cert }),
        ...(tls?.key === undefined ? {} : { key: tls.key }),
        rejectUnauthorized: tls?.rejectUnauthorized ?? true,
        ALPNProtocols: ['http/1.1'],
      };
    }

    #account(req: http.ClientRequest, ticket: Attempt, readsReports: boolean): void {
      let outcome: RequestOutcome | undefined;
      let response: AttemptResponse | undefined;
      req.once('response', (res: http.IncomingMessage) => {
        const status = res.statusCode ?? 0;
        outcome = status >= 500 ? 'http-error' : 'success';
        // `res.headers` is built on first read: only a cluster that reads reports reads it.
        response = httpAttemptResponse(status, readsReports ? res.headers : undefined, readsReports);
      });
      req.once('error', (err: NodeJS.ErrnoException) => {
        // The cluster's one classification; node:http cannot tell how much was written, so a
        // connect-failure code on a fresh socket counts as a connect failure.
        if (outcome === undefined) outcome = outcomeOf(classifyFailure(err, false, req.reusedSocket));
      });
      req.once('close', () => ticket.end(outcome ?? (req.destroyed ? 'aborted' : 'success'), response));
    }

    #track(cluster: Cluster, socket: TrackedSocket): void {
      let set = this.#sockets.get(cluster);
      if (set === undefined) {
        set = new Set();
        this.#sockets.set(cluster, set);
      }
      set.add(socket);
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        const meta = socket[kMeta];
        const internals = clusterInternals(cluster);
        if (meta?.endpoint !== undefined) internals.noteConnection(meta.endpoint.key, 'opened');
        socket.once('close', () => {
          if (meta?.endpoint !== undefined)
            internals.noteConnection(meta.endpoint.key, 'closed', meta.retire ? 'requests' : 'peer');
        });
      });
      socket.once('close', () => set?.delete(socket));
      // Runs before the Agent's own 'free' handler: a socket at its limit never carries another request.
      socket.prependListener('free', () => {
        const meta = socket[kMeta];
        if (meta === undefined || !socket._httpMessage) return;
        meta.requests++;
        const verdict = lifetime.canCarryAnother(
          {
            openedAtMs: meta.openedAtMs,
            maxAgeMs: meta.maxAgeMs,
            requests: meta.requests,
            inFlight: 0,
            idleSinceMs: clockNow(),
          },
          clockNow(),
        );
        if (verdict.type === 'retire' || meta.retire || this.#shutdown.closed) {
          meta.retire = true;
          socket.destroy();
        }
      });
    }

    #watch(cluster: Cluster): void {
      if (this.#watched.has(cluster)) return;
      this.#watched.add(cluster);
      clusterInternals(cluster).onEligibleChange((eligible) => {
        if (cluster.mode === 'legacy') return;
        for (const s of this.#sockets.get(cluster) ?? []) {
          const key = s[kMeta]?.endpoint?.key;
          if (key === undefined || eligible.has(key)) continue;
          const meta = s[kMeta];
          if (meta !== undefined) meta.retire = true;
          if (!s._httpMessage) s.destroy();
        }
      });
    }
  }

  return new Agent();
}

/** Fails a request that never got a socket (as the Agent does when a connection cannot be made). */
function failRequest(req: http.ClientRequest, err: Error): void {
  (req as unknown as { onSocket(socket: null, err: Error): void }).onSocket(null, err);
}
