/**
 * A kubeconfig cluster's `proxy-url`, over real sockets: a tiny HTTP CONNECT proxy written here
 * (it parses `CONNECT host:port`, counts tunnels and pipes the sockets) stands in front of the
 * fake API server. The kubeconfig names the API server by a host name only the proxy can
 * resolve, so discovery that works at all went through the proxy: an HTTPS API server (TLS
 * inside the tunnel, verified against the kubeconfig's CA) and a plain-HTTP one are listed and
 * watched through it. A `socks5://` proxy-url is reported as an invalid kubeconfig naming the
 * field and what is expected.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ErrorCodes } from '../../src/core/errors.js';
import { createKubernetesEndpointSource, type KubernetesEndpointSource } from '../../src/discovery/kubernetes/index.js';
import { selfSignedCert } from '../server/support/servers.js';
import { endpointSlice, FakeKubeApiServer, service } from '../support/fake-kube-api-server.js';
import { okWith, waitForSnapshot } from './source-helpers.js';

/** Host names only the proxy resolves (to 127.0.0.1): nothing else can reach the API servers by them. */
const TLS_HOST = 'kube-api.proxied.invalid';
const PLAIN_HOST = 'kube-plain.proxied.invalid';
/** The first kubeconfig load imports @kubernetes/client-node: allow for a slow machine. */
const LOAD_MS = 15_000;

/** A minimal HTTP CONNECT proxy on 127.0.0.1 that maps the test host names to loopback. */
class ConnectProxy {
  /** `host:port` of every tunnel opened, in order. */
  readonly tunnels: string[] = [];
  /** Requests that were not CONNECT (absolute-form forwarding is not offered). */
  readonly refused: string[] = [];
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();

  private constructor(server: net.Server) {
    this.#server = server;
  }

  static async start(): Promise<ConnectProxy> {
    const proxy: ConnectProxy = new ConnectProxy(net.createServer((socket) => proxy.#accept(socket)));
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    const address = this.#server.address() as net.AddressInfo;
    return `http://127.0.0.1:${address.port}`;
  }

  #track(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.on('close', () => this.#sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  #accept(client: net.Socket): void {
    this.#track(client);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > 16_384) client.destroy();
        return;
      }
      client.off('data', onData);
      const requestLine = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
      const rest = head.subarray(end + 4);
      const m = /^CONNECT ([^\s:]+):(\d+) HTTP\/1\.[01]$/.exec(requestLine);
      if (m === null) {
        this.refused.push(requestLine);
        client.end('HTTP/1.1 405 Method Not Allowed\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      const [, host = '', port = ''] = m;
      const target = host === TLS_HOST || host === PLAIN_HOST ? '127.0.0.1' : undefined;
      if (target === undefined) {
        this.refused.push(requestLine);
        client.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      this.tunnels.push(`${host}:${port}`);
      const upstream = net.connect(Number(port), target, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (rest.length > 0) upstream.write(rest);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      this.#track(upstream);
      upstream.on('close', () => client.destroy());
      client.on('close', () => upstream.destroy());
    };
    client.on('data', onData);
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    await closed;
  }
}

let dir: string;
let proxy: ConnectProxy;
let tlsApi: FakeKubeApiServer;
let plainApi: FakeKubeApiServer;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'evenlb-kubeproxy-'));
  proxy = await ConnectProxy.start();
  const tls = selfSignedCert([TLS_HOST], [], 'kube-apiserver');
  tlsApi = await FakeKubeApiServer.start({ tls: { ...tls, ca: tls.cert }, token: 'via-proxy' });
  plainApi = await FakeKubeApiServer.start({ token: 'plain-via-proxy' });
  for (const api of [tlsApi, plainApi]) {
    api.applyService(service({ name: 'web', namespace: 'px', ports: [{ port: 80, targetPort: 8080 }] }));
    api.applyEndpointSlice(webSlice('10.0.0.1'));
  }
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await tlsApi.close();
  await plainApi.close();
  await proxy.close();
  await rm(dir, { recursive: true, force: true });
});

function webSlice(...addresses: string[]) {
  return endpointSlice({
    name: 'web-a',
    namespace: 'px',
    service: 'web',
    ports: [{ port: 8080 }],
    endpoints: addresses.map((address) => ({ address })),
  });
}

/** Writes `api`'s kubeconfig with the server renamed to `host` and the given `proxy-url`. */
async function kubeconfig(api: FakeKubeApiServer, host: string, proxyUrl: string, name: string): Promise<string> {
  const config = parse(api.kubeconfigYaml()) as { clusters: { cluster: Record<string, string> }[] };
  const cluster = config.clusters[0]!.cluster;
  const server = new URL(cluster.server!);
  server.hostname = host;
  cluster.server = server.origin;
  cluster['proxy-url'] = proxyUrl;
  const file = join(dir, name);
  await writeFile(file, stringify(config));
  return file;
}

function follow(file: string): KubernetesEndpointSource {
  const source = createKubernetesEndpointSource('k8s:///web.px:80', {
    kubeconfig: file,
    backoffBaseMs: 20,
    backoffMaxMs: 200,
    requestTimeoutMs: 5000,
    env: {},
  });
  closers.push(() => source.close());
  return source;
}

describe('kubeconfig proxy-url', () => {
  it('lists and watches an HTTPS API server through an HTTP CONNECT tunnel', async () => {
    const before = proxy.tunnels.length;
    const source = follow(await kubeconfig(tlsApi, TLS_HOST, proxy.url, 'tls.yaml'));
    await waitForSnapshot(source, okWith('10.0.0.1:8080'), LOAD_MS, 'the set through the proxy');
    // The watch is open (through the proxy) and delivers a change.
    await tlsApi.waitFor(
      () => tlsApi.openWatches({ resource: 'endpointslices', namespace: 'px' }) > 0,
      5000,
      'a watch',
    );
    tlsApi.applyEndpointSlice(webSlice('10.0.0.1', '10.0.0.2'));
    await waitForSnapshot(source, okWith('10.0.0.1:8080', '10.0.0.2:8080'), 5000, 'the change through the proxy');

    const tunnels = proxy.tunnels.slice(before);
    expect(tunnels.length).toBeGreaterThanOrEqual(1);
    expect(new Set(tunnels)).toEqual(new Set([`${TLS_HOST}:${tlsApi.port}`]));
    expect(proxy.refused).toEqual([]);
    const seen = tlsApi.requestsMatching({ namespace: 'px' });
    expect(seen.some((r) => r.verb === 'list')).toBe(true);
    expect(seen.some((r) => r.verb === 'watch')).toBe(true);
    expect(seen.every((r) => r.token === 'via-proxy')).toBe(true);
  });

  it('reaches a plain-HTTP API server through the proxy too', async () => {
    const before = proxy.tunnels.length;
    const source = follow(await kubeconfig(plainApi, PLAIN_HOST, proxy.url, 'plain.yaml'));
    await waitForSnapshot(source, okWith('10.0.0.1:8080'), LOAD_MS, 'the set through the proxy');
    await plainApi.waitFor(
      () => plainApi.openWatches({ resource: 'endpointslices', namespace: 'px' }) > 0,
      5000,
      'a watch',
    );
    plainApi.applyEndpointSlice(webSlice('10.0.0.3'));
    await waitForSnapshot(source, okWith('10.0.0.3:8080'), 5000, 'the change through the proxy');
    const tunnels = proxy.tunnels.slice(before);
    expect(tunnels.length).toBeGreaterThanOrEqual(1);
    expect(new Set(tunnels)).toEqual(new Set([`${PLAIN_HOST}:${plainApi.port}`]));
  });

  it('reports an unsupported proxy-url scheme as an invalid kubeconfig naming the field', async () => {
    const source = follow(await kubeconfig(tlsApi, TLS_HOST, 'socks5://127.0.0.1:1080', 'socks.yaml'));
    const snapshot = await waitForSnapshot(source, (s) => s.status.state === 'degraded', LOAD_MS, 'the error');
    if (snapshot.status.state !== 'degraded') throw new Error('unreachable');
    expect(snapshot.status.error.code).toBe(ErrorCodes.INVALID_CONFIG);
    expect(snapshot.status.error.message).toContain('"proxy-url"');
    expect(snapshot.status.error.message).toContain('http://');
    expect(snapshot.status.error.message).toContain('socks5:');
    expect(snapshot.status.error.message).toContain('socks.yaml');
  });
});
