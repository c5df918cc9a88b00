/**
 * What the shipped gateway manifest exposes on the pod IP. Its ConfigMap's `proxy.yaml` is
 * loaded with the real config loader, and a proxy is started with that `admin` section (ports
 * made ephemeral; listeners and clusters replaced by a static backend, since the manifest's
 * `k8s:///` targets need an API server). 127.0.0.2 plays the pod IP: it reaches sockets bound
 * to `0.0.0.0` but not those bound to `127.0.0.1`. From there `/metrics`, `/healthz` and
 * `/readyz` answer while `/config`, `/endpoints`, `/api/stats` and the dashboard do not; on
 * loopback the full admin listener answers, with secrets redacted from `/config`.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { redactSecrets } from '../../src/proxy/admin/admin-server.js';
import type { ProxyConfig } from '../../src/proxy/config/config-schema.js';
import { parseAddress } from '../../src/proxy/config/listen-address.js';
import { parseProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { ProxyServer } from '../../src/proxy/proxy-server.js';
import { type Backend, quietLogger, startBackend } from './helpers.js';

const CONFIGMAP = join(import.meta.dirname, '..', '..', 'deploy', 'kubernetes', 'gateway', 'configmap.yaml');

function shippedConfig(): ProxyConfig {
  for (const doc of parseAllDocuments(readFileSync(CONFIGMAP, 'utf8'))) {
    const o = doc.toJS() as { kind?: string; data?: Record<string, string> } | null;
    const text = o?.kind === 'ConfigMap' ? o.data?.['proxy.yaml'] : undefined;
    if (text !== undefined) return parseProxyConfig(text, CONFIGMAP);
  }
  throw new Error(`no proxy.yaml in ${CONFIGMAP}`);
}

/** `host:0`: the manifest's bind address with an ephemeral port. */
function ephemeral(address: string): string {
  const { host } = parseAddress(address);
  return `${host.includes(':') ? `[${host}]` : host}:0`;
}

function get(host: string, port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    http
      .get({ host, port, path, agent: false, timeout: 3000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

const shipped = shippedConfig();
let backend: Backend;
let proxy: ProxyServer;

beforeAll(async () => {
  backend = await startBackend('b', '127.0.0.1');
  const admin = shipped.admin;
  if (admin === undefined) throw new Error('the shipped config has no admin listener');
  const config: ProxyConfig = {
    ...shipped,
    admin: {
      address: ephemeral(admin.address),
      ...(admin.metricsAddress === undefined ? {} : { metricsAddress: ephemeral(admin.metricsAddress) }),
    },
    listeners: [{ ...(shipped.listeners[0] as ProxyConfig['listeners'][number]), address: '127.0.0.1:0' }],
    clusters: [{ ...(shipped.clusters[0] as ProxyConfig['clusters'][number]), target: `static:///${backend.key}` }],
    routes: [{ hosts: ['*'], pathPrefix: '/', cluster: (shipped.clusters[0] as { name: string }).name }],
  };
  proxy = await ProxyServer.start(config, { logger: quietLogger });
});

afterAll(async () => {
  await proxy?.close();
  await backend?.close();
});

describe('shipped gateway manifest: admin exposure', () => {
  it('binds the full admin listener to loopback and a metrics-only listener to the pod IP', () => {
    expect(parseAddress(shipped.admin?.address ?? '').host).toBe('127.0.0.1');
    expect(shipped.admin?.metricsAddress).toBeDefined();
  });

  it.each(['/metrics', '/healthz', '/readyz'])('%s is reachable on the pod IP', async (path) => {
    expect(await get('127.0.0.2', proxy.metricsPort as number, path)).toBe(200);
  });

  it.each(['/config', '/endpoints', '/api/stats', '/'])('%s is not reachable on the pod IP', async (path) => {
    expect(await get('127.0.0.2', proxy.metricsPort as number, path)).toBe(404);
    expect(await get('127.0.0.2', proxy.adminPort as number, path)).toBe('ECONNREFUSED');
  });

  it('serves config (secrets redacted) and endpoints on loopback', async () => {
    expect(await get('127.0.0.1', proxy.adminPort as number, '/endpoints')).toBe(200);
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: proxy.adminPort as number, path: '/config', agent: false }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
    expect(JSON.parse(body).listeners[0].name).toBe(shipped.listeners[0]?.name);
  });
});

describe('redactSecrets', () => {
  it('hides keys, tokens, passwords and secrets at any depth', () => {
    const out = redactSecrets({
      listeners: [{ tls: { cert: '/c.pem', key: '/k.pem' } }],
      clusters: [{ policyOptions: { apiToken: 't', clientSecret: 's', password: 'p', weight: 2 } }],
    });
    expect(out).toEqual({
      listeners: [{ tls: { cert: '/c.pem', key: '[redacted]' } }],
      clusters: [
        { policyOptions: { apiToken: '[redacted]', clientSecret: '[redacted]', password: '[redacted]', weight: 2 } },
      ],
    });
  });
});
