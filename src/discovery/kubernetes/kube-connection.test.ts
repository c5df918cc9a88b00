import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../core/errors.js';
import { checkProxyUrl, connectionKey, KubeConnection, resolveKubeConnectionConfig } from './kube-connection.js';

const dir = mkdtempSync(join(tmpdir(), 'evenlb-conn-'));
const sa = join(dir, 'sa');
mkdirSync(sa);
writeFileSync(join(sa, 'token'), 'tok\n');
writeFileSync(join(sa, 'ca.crt'), 'CA');
const home = join(dir, 'home');
mkdirSync(join(home, '.kube'), { recursive: true });
writeFileSync(join(home, '.kube', 'config'), 'apiVersion: v1\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const inCluster = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };

describe('resolveKubeConnectionConfig', () => {
  it('prefers an explicit connection, then a kubeconfig path, KUBECONFIG, in-cluster, ~/.kube/config', () => {
    const env = { ...inCluster, KUBECONFIG: '/a:/b', HOME: home };
    const base = { serviceAccountDir: sa, env };
    expect(resolveKubeConnectionConfig({ ...base, connection: { server: 'http://127.0.0.1:1' } }).type).toBe(
      'explicit',
    );
    expect(resolveKubeConnectionConfig({ ...base, kubeconfig: '/k' })).toEqual({
      type: 'kubeconfig',
      files: ['/k'],
      context: undefined,
    });
    expect(resolveKubeConnectionConfig(base)).toEqual({ type: 'kubeconfig', files: ['/a', '/b'], context: undefined });
    expect(resolveKubeConnectionConfig({ serviceAccountDir: sa, env: { ...inCluster, HOME: home } })).toEqual({
      type: 'in-cluster',
      server: 'https://10.96.0.1:443',
      tokenFile: join(sa, 'token'),
      caFile: join(sa, 'ca.crt'),
    });
    // A context names a kubeconfig context: in-cluster is skipped.
    expect(
      resolveKubeConnectionConfig({ serviceAccountDir: sa, env: { ...inCluster, HOME: home }, context: 'c' }),
    ).toEqual({ type: 'kubeconfig', files: [join(home, '.kube', 'config')], context: 'c' });
    expect(resolveKubeConnectionConfig({ serviceAccountDir: sa, env: { HOME: home } }).type).toBe('kubeconfig');
  });

  it('brackets an IPv6 service host and defaults the port to 443', () => {
    const c = resolveKubeConnectionConfig({ serviceAccountDir: sa, env: { KUBERNETES_SERVICE_HOST: 'fd00::1' } });
    expect(c).toMatchObject({ type: 'in-cluster', server: 'https://[fd00::1]:443' });
  });

  it('does not take in-cluster without a token file, and explains what it looked for', () => {
    expect(() => resolveKubeConnectionConfig({ serviceAccountDir: join(dir, 'none'), env: inCluster })).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_CONFIG,
        message: expect.stringMatching(/KUBERNETES_SERVICE_HOST/),
      }),
    );
  });
});

describe('connectionKey', () => {
  it('is stable, distinguishes credentials and never contains a secret', () => {
    const a = connectionKey({ type: 'explicit', server: 'https://k:6443', token: 'super-secret-token' });
    const b = connectionKey({ type: 'explicit', server: 'https://k:6443', token: 'other' });
    expect(a).toBe(connectionKey({ type: 'explicit', server: 'https://k:6443', token: 'super-secret-token' }));
    expect(a).not.toBe(b);
    expect(a).not.toContain('super-secret-token');
  });
});

describe('KubeConnection', () => {
  it('reads the token file on every prepare, and reuses the agent while TLS material is unchanged', async () => {
    const tokenFile = join(dir, 'rotating');
    writeFileSync(tokenFile, 'one\n');
    const conn = new KubeConnection({ type: 'explicit', server: 'http://127.0.0.1:1/', tokenFile });
    try {
      const first = await conn.prepare();
      expect(first.headers.authorization).toBe('Bearer one');
      expect(first.server).toBe('http://127.0.0.1:1');
      writeFileSync(tokenFile, 'two\n');
      const second = await conn.prepare();
      expect(second.headers.authorization).toBe('Bearer two');
      expect(second.dispatcher).toBe(first.dispatcher);
    } finally {
      await conn.close();
    }
  });

  it('fails with DISCOVERY_FAILED naming the file when the token cannot be read', async () => {
    const conn = new KubeConnection({
      type: 'in-cluster',
      server: 'https://x',
      tokenFile: join(dir, 'missing'),
      caFile: 'x',
    });
    await expect(conn.prepare()).rejects.toMatchObject({
      code: ErrorCodes.DISCOVERY_FAILED,
      message: expect.stringMatching(/cannot read the service-account token or CA/),
    });
    await conn.close();
  });
});

describe('checkProxyUrl', () => {
  it('accepts http:// proxies and rejects other schemes, naming the field without echoing credentials', () => {
    expect(checkProxyUrl('http://proxy.corp:3128', 'cluster "c"')).toBe('http://proxy.corp:3128');
    expect(checkProxyUrl('http://user:pw@10.0.0.9:8080', 'cluster "c"')).toBe('http://user:pw@10.0.0.9:8080');
    for (const bad of ['socks5://user:secret@127.0.0.1:1080', 'https://proxy:443', 'proxy:3128', 'not a url']) {
      let error: unknown;
      try {
        checkProxyUrl(bad, 'cluster "c"');
      } catch (err) {
        error = err;
      }
      expect(error).toMatchObject({
        code: ErrorCodes.INVALID_CONFIG,
        message: expect.stringMatching(/^cluster "c": field "proxy-url" must be an http:\/\/ proxy URL/),
      });
      expect((error as Error).message).not.toContain('secret');
    }
  });
});
