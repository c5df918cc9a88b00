/**
 * `file:///` and `dns:///` endpoint sources against real files and a real DNS server on
 * loopback UDP: updates are followed, a broken or half-written file and a failing resolver
 * keep the last good set (status `degraded`), a name or file that never existed is
 * `not-found`, and `createEndpointSource` dispatches on the scheme.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  createEndpointSource,
  type DiscoveryLogger,
  type DiscoverySnapshot,
  DnsEndpointSource,
  type EndpointSource,
  FileEndpointSource,
} from '../../src/index.js';
import { waitFor } from '../support/loopback-pods.js';
import { TinyDnsServer } from '../support/tiny-dns-server.js';

function quietLogger(): DiscoveryLogger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, warn: (_f, m) => warnings.push(m), info: () => {} };
}

const keys = (s: DiscoverySnapshot) => s.endpoints.endpoints.map((e) => e.key).sort();

describe('FileEndpointSource', () => {
  let dir = '';
  let source: EndpointSource | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'evenlb-file-source-'));
  });
  afterEach(async () => {
    await source?.close();
    source = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  test('follows atomic replacements, keeps the last good set on a broken file, recovers', async () => {
    const path = join(dir, 'endpoints.json');
    const write = (text: string) => {
      writeFileSync(`${path}.tmp`, text);
      renameSync(`${path}.tmp`, path);
    };
    write(
      JSON.stringify([
        { address: '10.0.0.1', port: 80 },
        { address: '10.0.0.2', port: 80, zone: 'a', weight: 2 },
      ]),
    );
    const logger = quietLogger();
    const file = new FileEndpointSource({ path, logger, pollIntervalMs: 200 });
    source = file;
    await file.ready();
    expect(keys(file.snapshot())).toEqual(['10.0.0.1:80', '10.0.0.2:80']);
    expect(file.snapshot().endpoints.get('10.0.0.2:80')?.weight).toBe(2);

    write(JSON.stringify({ endpoints: [{ address: '10.0.0.3', port: 80, conditions: { ready: false } }] }));
    await waitFor(() => file.snapshot().endpoints.has('10.0.0.3:80'), 'the new set', 3_000);
    expect(file.snapshot().endpoints.get('10.0.0.3:80')?.conditions.ready).toBe(false);

    write('[{"address": "10.0.0.4", "po'); // half-written
    await waitFor(() => file.snapshot().status.state === 'degraded', 'degraded status', 3_000);
    expect(keys(file.snapshot())).toEqual(['10.0.0.3:80']);
    expect(logger.warnings.length).toBeGreaterThanOrEqual(1);

    write(JSON.stringify([{ address: '10.0.0.5', port: 80 }]));
    await waitFor(() => file.snapshot().status.state === 'ok', 'recovery', 3_000);
    expect(keys(file.snapshot())).toEqual(['10.0.0.5:80']);
  });

  test('a file that never existed is not-found; a file deleted later keeps the last set', async () => {
    const path = join(dir, 'later.json');
    const file = new FileEndpointSource({ path, logger: quietLogger(), pollIntervalMs: 50 });
    source = file;
    await file.ready();
    expect(file.snapshot().status.state).toBe('not-found');
    writeFileSync(path, JSON.stringify([{ address: '10.0.0.1', port: 8080 }]));
    await waitFor(() => file.snapshot().status.state === 'ok', 'the file to appear', 3_000);
    rmSync(path);
    await waitFor(() => file.snapshot().status.state === 'degraded', 'degraded after deletion', 3_000);
    expect(keys(file.snapshot())).toEqual(['10.0.0.1:8080']);
  });

  test('polling alone notices changes (watch off)', async () => {
    const path = join(dir, 'poll.json');
    writeFileSync(path, JSON.stringify([{ address: '10.0.0.1', port: 80 }]));
    const file = new FileEndpointSource({ path, watch: false, pollIntervalMs: 30, logger: quietLogger() });
    source = file;
    await file.ready();
    writeFileSync(
      path,
      JSON.stringify([
        { address: '10.0.0.1', port: 80 },
        { address: '10.0.0.2', port: 80 },
      ]),
    );
    await waitFor(() => file.snapshot().endpoints.size === 2, 'the polled change', 3_000);
  });

  test('bad options name the field', () => {
    expect(() => new FileEndpointSource({ path: 'relative.json' })).toThrow(/"path" must be an absolute path/);
  });
});

describe('DnsEndpointSource', () => {
  let dns: TinyDnsServer | undefined;
  let source: EndpointSource | undefined;
  afterEach(async () => {
    await source?.close();
    source = undefined;
    await dns?.close();
    dns = undefined;
  });

  test('resolves A and AAAA from a real DNS server, re-resolves, keeps the last set on failure', async () => {
    dns = await TinyDnsServer.start({ 'web.prod.svc.cluster.local': ['127.0.0.2', '127.0.0.3', '::1'] });
    const logger = quietLogger();
    const s = new DnsEndpointSource({
      host: 'web.prod.svc.cluster.local',
      port: 8080,
      servers: [dns.server],
      refreshIntervalMs: 50,
      timeoutMs: 200,
      logger,
    });
    source = s;
    await s.ready();
    expect(keys(s.snapshot())).toEqual(['127.0.0.2:8080', '127.0.0.3:8080', '[::1]:8080']);
    expect(dns.queries).toContain('web.prod.svc.cluster.local/A');
    expect(dns.queries).toContain('web.prod.svc.cluster.local/AAAA');

    dns.records = { 'web.prod.svc.cluster.local': ['127.0.0.4'] };
    await waitFor(() => s.snapshot().endpoints.has('127.0.0.4:8080'), 're-resolution', 3_000);
    expect(s.snapshot().endpoints.size).toBe(1);

    dns.mode = 'servfail';
    await waitFor(() => s.snapshot().status.state === 'degraded', 'degraded on SERVFAIL', 3_000);
    expect(keys(s.snapshot())).toEqual(['127.0.0.4:8080']);
    // Once resolved, even NXDOMAIN keeps the last set.
    dns.mode = 'answer';
    dns.records = {};
    await waitFor(() => logger.warnings.length >= 2, 'more failures', 3_000);
    expect(s.snapshot().status.state).toBe('degraded');
    expect(keys(s.snapshot())).toEqual(['127.0.0.4:8080']);
  });

  test('a name that never resolved is not-found; a name without addresses is an empty ok set', async () => {
    dns = await TinyDnsServer.start({ 'empty.prod.svc.cluster.local': [] });
    const missing = new DnsEndpointSource({ host: 'nope.prod.svc.cluster.local', port: 80, servers: [dns.server] });
    const empty = new DnsEndpointSource({ host: 'empty.prod.svc.cluster.local', port: 80, servers: [dns.server] });
    try {
      await Promise.all([missing.ready(), empty.ready()]);
      expect(missing.snapshot().status.state).toBe('not-found');
      expect(empty.snapshot().status.state).toBe('ok');
      expect(empty.snapshot().endpoints.size).toBe(0);
    } finally {
      await missing.close();
      await empty.close();
    }
  });

  test('lookup mode uses the system resolver (localhost from /etc/hosts)', async () => {
    const s = createEndpointSource('dns:///localhost:8080', { dns: { mode: 'lookup', family: 'ipv4' } });
    source = s;
    await s.ready();
    expect(keys(s.snapshot())).toEqual(['127.0.0.1:8080']);
    expect(s.target).toBe('dns:///localhost:8080');
  });
});

describe('createEndpointSource', () => {
  test('dispatches on the scheme and explains k8s without a registered factory', async () => {
    const s = createEndpointSource('static:///10.0.0.1:80,[::1]:81');
    expect(keys(s.snapshot())).toEqual(['10.0.0.1:80', '[::1]:81']);
    await s.close();
    expect(() => createEndpointSource('nope:///x')).toThrow(/unknown scheme/);
  });
});
