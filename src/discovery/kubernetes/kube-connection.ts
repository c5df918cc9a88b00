/**
 * How evenlb reaches the Kubernetes API server. The configuration is chosen once, in the order
 * controller-runtime uses: an explicit `connection`, an explicit `kubeconfig` path, the
 * `KUBECONFIG` variable, in-cluster (`KUBERNETES_SERVICE_HOST` plus the service-account
 * token), then `~/.kube/config`. Credentials are fetched again for every request: a projected
 * service-account token (rotated by the kubelet about hourly) and its CA are re-read from
 * their files, and kubeconfig users go through @kubernetes/client-node's authenticators (exec
 * plugins, OIDC, token files), which cache and refresh tokens themselves. The undici agent is
 * rebuilt only when the TLS material (or the proxy) changes. A kubeconfig cluster's `proxy-url`
 * (an `http://` proxy, as kubectl honours it) routes every request through undici's
 * `ProxyAgent`: an HTTP CONNECT tunnel to the API server, TLS inside it for `https://` servers.
 * @kubernetes/client-node is an optional peer, imported only to read a kubeconfig: in-cluster
 * and explicit connections work without it, and a kubeconfig without it fails naming the
 * package to install (client-node-package.ts).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { delimiter, join } from 'node:path';
import { Agent, type Dispatcher, ProxyAgent } from 'undici';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { importClientNode } from './client-node-package.js';

/** The API server connection given explicitly (tests, out-of-cluster tools). */
export interface KubernetesConnectionOptions {
  /** `https://host:port` (or `http://` for a local test server), optionally with a path prefix. */
  readonly server: string;
  /** A bearer token. */
  readonly token?: string | undefined;
  /** A file holding a bearer token, re-read for every request (rotation). */
  readonly tokenFile?: string | undefined;
  /** PEM CA bundle to verify the server's certificate with (default: Node's roots). */
  readonly ca?: string | undefined;
  /** Skip verifying the server's certificate (tests only). */
  readonly insecureSkipTlsVerify?: boolean | undefined;
}

/** Where the configuration came from; the union decides how credentials are fetched. */
export type KubeConnectionConfig =
  | ({ readonly type: 'explicit' } & KubernetesConnectionOptions)
  | { readonly type: 'in-cluster'; readonly server: string; readonly tokenFile: string; readonly caFile: string }
  | { readonly type: 'kubeconfig'; readonly files: readonly string[]; readonly context?: string | undefined };

export interface ResolveConnectionInput {
  readonly connection?: KubernetesConnectionOptions | undefined;
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
  /** Directory holding `token` and `ca.crt` in a pod. */
  readonly serviceAccountDir: string;
  /** Environment (`KUBECONFIG`, `KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT`, `HOME`). */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The default service-account directory mounted into every pod. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * Chooses the API server configuration. Throws `EVENLB_INVALID_CONFIG` when none is found.
 *
 * @example
 * resolveKubeConnectionConfig({ serviceAccountDir: SERVICE_ACCOUNT_DIR, env: process.env })
 * // in a pod → { type: 'in-cluster', server: 'https://10.96.0.1:443', tokenFile: ..., caFile: ... }
 */
export function resolveKubeConnectionConfig(input: ResolveConnectionInput): KubeConnectionConfig {
  const { env } = input;
  if (input.connection !== undefined) return { type: 'explicit', ...input.connection };
  if (input.kubeconfig !== undefined) return { type: 'kubeconfig', files: [input.kubeconfig], context: input.context };
  const fromEnv = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '');
  if (fromEnv.length > 0) return { type: 'kubeconfig', files: fromEnv, context: input.context };
  const host = env.KUBERNETES_SERVICE_HOST;
  const tokenFile = join(input.serviceAccountDir, 'token');
  if (input.context === undefined && host !== undefined && host !== '' && existsSync(tokenFile)) {
    const port = env.KUBERNETES_SERVICE_PORT || '443';
    const hostPart = isIP(host) === 6 ? `[${host}]` : host;
    return {
      type: 'in-cluster',
      server: `https://${hostPart}:${port}`,
      tokenFile,
      caFile: join(input.serviceAccountDir, 'ca.crt'),
    };
  }
  const home = env.HOME ?? env.USERPROFILE;
  if (home !== undefined && home !== '') {
    const file = join(home, '.kube', 'config');
    if (existsSync(file)) return { type: 'kubeconfig', files: [file], context: input.context };
  }
  throw new EvenlbError(
    ErrorCodes.INVALID_CONFIG,
    'no Kubernetes API configuration found: pass a connection or a kubeconfig path, set KUBECONFIG, ' +
      `run in a pod (KUBERNETES_SERVICE_HOST and ${tokenFile}), or create ~/.kube/config`,
    { details: { serviceAccountDir: input.serviceAccountDir } },
  );
}

const digest = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16);

/** A stable identity for a configuration (secrets hashed): sources with equal keys share watches. */
export function connectionKey(config: KubeConnectionConfig): string {
  switch (config.type) {
    case 'explicit':
      return [
        'explicit',
        config.server,
        config.token === undefined ? '' : digest(config.token),
        config.tokenFile ?? '',
        config.ca === undefined ? '' : digest(config.ca),
        config.insecureSkipTlsVerify === true ? 'insecure' : '',
      ].join('|');
    case 'in-cluster':
      return ['in-cluster', config.server, config.tokenFile, config.caFile].join('|');
    case 'kubeconfig':
      return ['kubeconfig', config.files.join(delimiter), config.context ?? ''].join('|');
  }
}

/** A short human description, for error messages. */
export function describeConnection(config: KubeConnectionConfig): string {
  switch (config.type) {
    case 'explicit':
      return `API server ${config.server}`;
    case 'in-cluster':
      return `in-cluster API server ${config.server}`;
    case 'kubeconfig':
      return `kubeconfig ${config.files.join(delimiter)}${config.context === undefined ? '' : ` (context ${config.context})`}`;
  }
}

interface TlsMaterial {
  ca?: string | Buffer | undefined;
  cert?: string | Buffer | undefined;
  key?: string | Buffer | undefined;
  rejectUnauthorized: boolean;
  servername?: string | undefined;
}

/** Credentials and transport of one request, before the dispatcher is chosen. */
interface Credentials {
  readonly server: string;
  readonly headers: Record<string, string>;
  readonly tls: TlsMaterial;
  /** An `http://` proxy to tunnel through (a kubeconfig cluster's `proxy-url`). */
  readonly proxyUrl?: string | undefined;
}

/**
 * Checks a kubeconfig cluster's `proxy-url`: only `http://HOST[:PORT]` proxies are supported
 * (requests are tunnelled with HTTP CONNECT). Throws `EVENLB_INVALID_CONFIG` naming the field.
 */
export function checkProxyUrl(proxyUrl: string, where: string): string {
  let url: URL | undefined;
  try {
    url = new URL(proxyUrl);
  } catch {
    url = undefined;
  }
  if (url?.protocol === 'http:' && url.hostname !== '') return proxyUrl;
  // The received value without credentials, which may be embedded in it.
  const received = url === undefined ? JSON.stringify(proxyUrl) : `"${url.protocol}//${url.host}"`;
  throw new EvenlbError(
    ErrorCodes.INVALID_CONFIG,
    `${where}: field "proxy-url" must be an http:// proxy URL (http://HOST:PORT, reached with HTTP CONNECT); received ${received}`,
    { details: { field: 'proxy-url', expected: 'http://HOST:PORT', received } },
  );
}

/** What one request needs: the base URL, headers with fresh credentials, and the dispatcher. */
export interface PreparedRequest {
  readonly server: string;
  readonly headers: Record<string, string>;
  readonly dispatcher: Dispatcher;
  /** The proxy requests go through, if any. */
  readonly proxyUrl?: string | undefined;
}

type KubeConfigInstance = import('@kubernetes/client-node').KubeConfig;

function failure(config: KubeConnectionConfig, what: string, cause: unknown): EvenlbError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new EvenlbError(ErrorCodes.DISCOVERY_FAILED, `${describeConnection(config)}: ${what}: ${reason}`, {
    cause,
    details: { connection: describeConnection(config) },
  });
}

async function readTrimmed(path: string): Promise<string> {
  return (await readFile(path, 'utf8')).trim();
}

/**
 * A connection to one API server: credentials per request, one undici agent reused across
 * requests (rebuilt when the CA or client certificate changes). `close()` closes the agent.
 */
export class KubeConnection {
  readonly config: KubeConnectionConfig;
  readonly key: string;
  #agent: Dispatcher | undefined;
  #tlsFingerprint = '';
  #kubeConfig: Promise<KubeConfigInstance> | undefined;
  #closed = false;

  constructor(config: KubeConnectionConfig) {
    this.config = config;
    this.key = connectionKey(config);
  }

  /** Fetches current credentials; throws `EVENLB_DISCOVERY_FAILED` when they cannot be read. */
  async prepare(): Promise<PreparedRequest> {
    const { server, headers, tls, proxyUrl } = await this.#credentials();
    return { server: server.replace(/\/+$/, ''), headers, dispatcher: this.#dispatcherFor(tls, proxyUrl), proxyUrl };
  }

  async #credentials(): Promise<Credentials> {
    const config = this.config;
    const headers: Record<string, string> = { accept: 'application/json' };
    switch (config.type) {
      case 'explicit': {
        let token = config.token;
        if (config.tokenFile !== undefined) {
          try {
            token = await readTrimmed(config.tokenFile);
          } catch (err) {
            throw failure(config, `cannot read token file ${config.tokenFile}`, err);
          }
        }
        if (token !== undefined && token !== '') headers.authorization = `Bearer ${token}`;
        return {
          server: config.server,
          headers,
          tls: { ca: config.ca, rejectUnauthorized: config.insecureSkipTlsVerify !== true },
        };
      }
      case 'in-cluster': {
        let token: string;
        let ca: string;
        try {
          token = await readTrimmed(config.tokenFile);
          ca = await readFile(config.caFile, 'utf8');
        } catch (err) {
          throw failure(config, 'cannot read the service-account token or CA', err);
        }
        headers.authorization = `Bearer ${token}`;
        return { server: config.server, headers, tls: { ca, rejectUnauthorized: true } };
      }
      case 'kubeconfig':
        return this.#fromKubeConfig(config, headers);
    }
  }

  async #fromKubeConfig(
    config: Extract<KubeConnectionConfig, { type: 'kubeconfig' }>,
    headers: Record<string, string>,
  ): Promise<Credentials> {
    const kc = await this.#loadKubeConfig(config);
    const cluster = kc.getCurrentCluster()!;
    const opts: {
      headers?: Record<string, string | string[] | number | undefined>;
      auth?: string;
      ca?: string | Buffer;
      cert?: string | Buffer;
      key?: string | Buffer;
      rejectUnauthorized?: boolean;
      servername?: string;
    } = { headers: {} };
    try {
      await kc.applyToHTTPSOptions(opts as Parameters<KubeConfigInstance['applyToHTTPSOptions']>[0]);
    } catch (err) {
      // client-node refuses to build an agent for a plain-HTTP server (`kubectl proxy`) unless
      // insecure-skip-tls-verify is set; it has filled in the credentials by then, and plain
      // HTTP needs no TLS material, so such a server is used as kubectl would use it.
      if (!cluster.server.startsWith('http:')) throw failure(config, 'cannot obtain credentials', err);
    }
    for (const [name, value] of Object.entries(opts.headers ?? {})) {
      if (typeof value === 'string' || typeof value === 'number') headers[name.toLowerCase()] = String(value);
    }
    if (opts.auth !== undefined) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    return {
      server: cluster.server,
      headers,
      tls: {
        ca: opts.ca,
        cert: opts.cert,
        key: opts.key,
        rejectUnauthorized: opts.rejectUnauthorized !== false,
        servername: opts.servername,
      },
      proxyUrl: cluster.proxyUrl === undefined || cluster.proxyUrl === '' ? undefined : cluster.proxyUrl,
    };
  }

  /**
   * Loads what credentials need before any request: @kubernetes/client-node and the kubeconfig
   * files (once). Kept out of request deadlines, since the first import alone can take a second.
   */
  async load(): Promise<void> {
    if (this.config.type === 'kubeconfig') await this.#loadKubeConfig(this.config);
  }

  #loadKubeConfig(config: Extract<KubeConnectionConfig, { type: 'kubeconfig' }>): Promise<KubeConfigInstance> {
    // One load shared by concurrent callers; a failed load is retried by the next caller.
    this.#kubeConfig ??= this.#readKubeConfig(config).catch((err: unknown) => {
      this.#kubeConfig = undefined;
      throw err;
    });
    return this.#kubeConfig;
  }

  async #readKubeConfig(config: Extract<KubeConnectionConfig, { type: 'kubeconfig' }>): Promise<KubeConfigInstance> {
    try {
      const { KubeConfig } = await importClientNode(describeConnection(config));
      const kc = new KubeConfig();
      const [first, ...rest] = config.files;
      kc.loadFromFile(first!);
      for (const file of rest) {
        const more = new KubeConfig();
        more.loadFromFile(file);
        // kubectl's rule: the first file that sets current-context wins.
        kc.mergeConfig(more, kc.currentContext !== '' && kc.currentContext !== undefined);
      }
      if (config.context !== undefined) {
        if (kc.getContextObject(config.context) === null) {
          throw new Error(`context ${JSON.stringify(config.context)} is not defined`);
        }
        kc.setCurrentContext(config.context);
      }
      const cluster = kc.getCurrentCluster();
      if (cluster === null) throw new Error('the current context names no cluster');
      if (cluster.proxyUrl !== undefined && cluster.proxyUrl !== '') {
        checkProxyUrl(cluster.proxyUrl, `${describeConnection(config)}: cluster ${JSON.stringify(cluster.name)}`);
      }
      return kc;
    } catch (err) {
      if (err instanceof EvenlbError) throw err;
      throw failure(config, 'cannot load', err);
    }
  }

  #dispatcherFor(tls: TlsMaterial, proxyUrl: string | undefined): Dispatcher {
    const fingerprint = digest(
      [tls.ca, tls.cert, tls.key].map((v) => (v === undefined ? '' : v.toString())).join('\0') +
        `\0${tls.rejectUnauthorized}\0${tls.servername ?? ''}\0${proxyUrl ?? ''}`,
    );
    if (this.#agent !== undefined && fingerprint === this.#tlsFingerprint) return this.#agent;
    const previous = this.#agent;
    this.#tlsFingerprint = fingerprint;
    const connect = {
      rejectUnauthorized: tls.rejectUnauthorized,
      ...(tls.ca === undefined ? {} : { ca: tls.ca }),
      ...(tls.cert === undefined ? {} : { cert: tls.cert }),
      ...(tls.key === undefined ? {} : { key: tls.key }),
      ...(tls.servername === undefined ? {} : { servername: tls.servername }),
    };
    // Watches are quiet for minutes: the watch code enforces its own idle timeout (bodyTimeout 0).
    this.#agent =
      proxyUrl === undefined
        ? new Agent({ bodyTimeout: 0, connect })
        : // Through the proxy: CONNECT to the API server, then the server's TLS inside the tunnel.
          new ProxyAgent({ uri: proxyUrl, bodyTimeout: 0, requestTls: connect });
    // Requests still running on the old agent (a watch) finish there.
    previous?.close().catch(() => {});
    if (this.#closed) void this.#agent.destroy().catch(() => {});
    return this.#agent;
  }

  /** Closes the agent, aborting any request still open on it. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const agent = this.#agent;
    this.#agent = undefined;
    await agent?.destroy().catch(() => {});
  }
}
