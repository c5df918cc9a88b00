/**
 * Idle-connection floods: thousands of connections that never send a byte must neither keep
 * their file descriptors nor slow anyone else down. 5,000 silent connections (opened by a
 * child process, so the test's own descriptors stay few) are all closed by the first-byte
 * deadline while normal requests keep their p99 under a second; and a proxy run with an
 * open-file limit of 256 (`prlimit`) keeps serving normal requests while 300 idle attackers
 * are connected — its default `maxConnections` is derived from that limit, and at the limit it
 * closes the oldest idle connections to make room.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli } from '../support/run-cli.js';
import { type Backend, startBackend, startProxy, waitFor } from './helpers.js';

/** Opens `count` silent connections in batches; prints `open N` then `closed N` as the proxy closes them. */
const ATTACKER = `
const net = require('node:net');
const [port, count] = process.argv.slice(1).map(Number);
let open = 0, closed = 0;
const batch = (from) => {
  const to = Math.min(count, from + 250);
  let connected = 0;
  for (let i = from; i < to; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    s.once('connect', () => { open++; if (++connected === to - from && to < count) batch(to); if (open === count) console.log('open ' + open); });
    s.once('close', () => { closed++; if (closed % 500 === 0 || closed === count) console.log('closed ' + closed); if (closed === count) process.exit(0); });
  }
};
batch(0);
setTimeout(() => process.exit(1), 60000).unref();
`;

function get(port: number, host = 'a.test'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
  });
}

let backend: Backend;
const children: ChildProcess[] = [];

beforeAll(async () => {
  backend = await startBackend('b', '127.0.0.81');
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await backend?.close();
});

describe('idle-connection floods', () => {
  it('5,000 silent connections are closed by the first-byte deadline; normal requests keep p99 < 1 s', async () => {
    const proxy = await startProxy({
      listeners: [{ name: 'web', address: '127.0.0.1:0', limits: { firstByteTimeoutMs: 1500 } }],
      clusters: [{ name: 'b', target: `static:///${backend.key}` }],
    });
    try {
      const port = proxy.listenerPort('web') as number;
      const attacker = spawn(process.execPath, ['-e', ATTACKER, String(port), '5000'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(attacker);
      let out = '';
      attacker.stdout?.setEncoding('utf8');
      attacker.stdout?.on('data', (c: string) => (out += c));
      const latenciesMs: number[] = [];
      const statuses: number[] = [];
      // Normal requests, one at a time, on fresh connections, until every attacker is closed (bounded).
      const deadline = Date.now() + 45_000;
      while (!out.includes('closed 5000') && Date.now() < deadline && statuses.length < 2000) {
        const t0 = Date.now();
        statuses.push(await get(port).catch(() => 0));
        latenciesMs.push(Date.now() - t0);
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(out).toContain('open 5000');
      expect(out).toContain('closed 5000');
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      latenciesMs.sort((a, b) => a - b);
      const p99 = latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(latenciesMs.length * 0.99))] as number;
      process.stdout.write(
        `5,000 silent connections: ${latenciesMs.length} normal requests, p99 ${p99} ms, max ${latenciesMs[latenciesMs.length - 1]} ms\n`,
      );
      expect(latenciesMs.length).toBeGreaterThanOrEqual(20);
      expect(p99).toBeLessThan(1000);
    } finally {
      await proxy.close();
    }
  }, 90_000);

  const hasPrlimit = spawnSync('sh', ['-c', 'command -v prlimit']).status === 0;
  it.skipIf(!hasPrlimit)(
    'open-file limit 256, 300 idle attackers: normal requests keep succeeding',
    async () => {
      const cli = buildCli();
      const dir = mkdtempSync(join(tmpdir(), 'evenlb-flood-'));
      const attackers: net.Socket[] = [];
      try {
        const probe = net.createServer();
        await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
        const port = (probe.address() as net.AddressInfo).port;
        await new Promise<void>((r) => probe.close(() => r()));
        const file = join(dir, 'proxy.yaml');
        // A long first-byte deadline: the attackers stay connected for the whole test, so only
        // the connection limit can make room.
        writeFileSync(
          file,
          `listeners: [{ name: web, address: "127.0.0.1:${port}", limits: { firstByteTimeoutMs: 120000 } }]\n` +
            `clusters: [{ name: b, target: "static:///${backend.key}" }]\nlogLevel: warn\n`,
        );
        const child = spawn('prlimit', ['--nofile=256:256', process.execPath, cli, 'proxy', '--config', file], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        children.push(child);
        let stderr = '';
        child.stderr?.setEncoding('utf8');
        child.stderr?.on('data', (c: string) => (stderr += c));
        await waitFor(async () => (await get(port).catch(() => 0)) === 200, 15_000, `proxy start (${stderr})`);
        for (let i = 0; i < 300; i++) {
          const s = net.connect(port, '127.0.0.1');
          s.on('error', () => {});
          attackers.push(s);
        }
        await waitFor(() => attackers.every((s) => !s.connecting), 10_000, 'attackers connected');
        const statuses: number[] = [];
        for (let i = 0; i < 30; i++) statuses.push(await get(port).catch(() => 0));
        expect(statuses.filter((s) => s !== 200)).toEqual([]);
        expect(child.exitCode).toBeNull();
      } finally {
        for (const s of attackers) s.destroy();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
