/**
 * `evenlb proxy` as a real child process: invalid configurations exit with code 2 before
 * anything listens, naming the field and the expected value; SIGHUP and a file change reload
 * the configuration; a bad reload keeps the running configuration and logs why.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { buildCli, type CliRun, runCli } from '../support/run-cli.js';
import { type Backend, startBackend, waitFor } from './helpers.js';

let cli = '';
let dir = '';

beforeAll(() => {
  cli = buildCli();
  dir = mkdtempSync(join(tmpdir(), 'evenlb-proxy-config-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const invalid: { name: string; yaml: string; field: RegExp }[] = [
  {
    name: 'unknown listener protocol',
    yaml: 'listeners: [{ address: "127.0.0.1:0", protocol: quic }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]',
    field: /"listeners\[0\]\.protocol" must be one of "http", "https", "tcp"; received "quic"/,
  },
  {
    name: 'unknown policy',
    yaml: 'listeners: [{ address: "127.0.0.1:0" }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1", policy: fastest }]',
    field: /"clusters\[0\]\.policy" must be one of .*round-robin.*; received "fastest"/,
  },
  {
    name: 'bad target URI',
    yaml: 'listeners: [{ address: "127.0.0.1:0" }]\nclusters: [{ name: a, target: "http://x" }]',
    field: /"clusters\[0\]\.target" must be a target URI/,
  },
  {
    name: 'route to an unknown cluster',
    yaml: 'listeners: [{ address: "127.0.0.1:0" }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]\nroutes: [{ cluster: b }]',
    field: /"routes\[0\]\.cluster" must name a cluster \(a\); received "b"/,
  },
  {
    name: 'unknown field',
    yaml: 'listeners: [{ address: "127.0.0.1:0", backlog: 5 }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]',
    field: /"listeners\[0\]\.backlog" is not a known field/,
  },
  {
    name: 'https without TLS files',
    yaml: 'listeners: [{ address: "127.0.0.1:0", protocol: https }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]',
    field: /"listeners\[0\]\.tls" is required for protocol "https"/,
  },
  {
    name: 'TLS files on a plain-HTTP listener',
    yaml: 'listeners: [{ address: "127.0.0.1:0", tls: { cert: /etc/passwd, key: /etc/passwd } }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]',
    field: /"listeners\[0\]\.tls" is only valid for protocol "https"/,
  },
  {
    name: 'an unreadable SNI certificate',
    yaml: 'listeners: [{ address: "127.0.0.1:0", protocol: https, tls: { cert: /etc/passwd, key: /etc/passwd, sni: [{ serverNames: [a.example], cert: /nonexistent/a.crt, key: /etc/passwd }] } }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]',
    field:
      /"listeners\[0\]\.tls\.sni\[0\]\.cert" must name a readable file \(ENOENT\); received "\/nonexistent\/a\.crt"/,
  },
  {
    name: 'a malformed SNI server name',
    yaml: 'listeners: [{ address: "127.0.0.1:0", protocol: https, tls: { cert: /etc/passwd, key: /etc/passwd, sni: [{ serverNames: ["a..b/c"], cert: /etc/passwd, key: /etc/passwd }] } }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]',
    field: /"listeners\[0\]\.tls\.sni\[0\]\.serverNames\[0\]"/,
  },
  {
    name: 'negative limit',
    yaml: 'listeners: [{ address: "127.0.0.1:0", limits: { maxHeaderCount: -1 } }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]',
    field: /"listeners\[0\]\.limits\.maxHeaderCount" must be >= 1; received -1/,
  },
  {
    name: 'trustForwardedHeaders on a tcp listener',
    yaml: 'listeners: [{ address: "127.0.0.1:0", protocol: tcp, cluster: a, trustForwardedHeaders: true }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]',
    field: /"listeners\[0\]\.trustForwardedHeaders" is only valid for protocol "http" or "https"/,
  },
  {
    name: 'a malformed admin metricsAddress',
    yaml: 'admin: { address: "127.0.0.1:0", metricsAddress: "9902" }\nlisteners: [{ address: "127.0.0.1:0" }]\nclusters: [{ name: a, target: "static:///127.0.0.1:1" }]',
    field: /"admin\.metricsAddress" must be HOST:PORT/,
  },
  {
    name: 'missing clusters',
    yaml: 'listeners: [{ address: "127.0.0.1:0" }]',
    field: /"clusters" is required/,
  },
];

describe('proxy configuration', () => {
  /** Timeout of one rejected start, ms (15 of them run at once on a shared machine). */
  const REJECT_TIMEOUT_MS = 60_000;
  /**
   * Every rejected start of this block, started together in child processes of their own: each
   * costs a process start and the CLI's module load (most of a second of CPU), and they share
   * nothing — one file per case — so the cases' checks wait for their own run only.
   */
  const rejected = new Map<string, Promise<CliRun>>();
  const startRejected = (key: string, args: string[]): void => {
    const run = runCli(cli, ['proxy', ...args], { timeoutMs: REJECT_TIMEOUT_MS });
    // Awaited by its test; a failure is reported there, not as an unhandled rejection.
    run.catch(() => undefined);
    rejected.set(key, run);
  };
  const rejectedRun = (key: string): Promise<CliRun> => rejected.get(key) as Promise<CliRun>;

  beforeAll(() => {
    invalid.forEach(({ name, yaml }, i) => {
      const file = join(dir, `bad-${i}.yaml`);
      writeFileSync(file, yaml);
      startRejected(name, ['--config', file]);
    });
    startRejected('bad flags', ['--listen', '127.0.0.1:0', '--upstream', 'static:///nope']);
    startRejected('no flags', []);
  });

  it.each(invalid)(
    'rejects $name with exit code 2 and names the field',
    async ({ name, field }) => {
      const r = await rejectedRun(name);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(field);
    },
    REJECT_TIMEOUT_MS,
  );

  it(
    'rejects bad flags with exit code 2',
    async () => {
      const r = await rejectedRun('bad flags');
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/clusters\[0\]\.target/);
      expect((await rejectedRun('no flags')).code).toBe(2);
    },
    REJECT_TIMEOUT_MS,
  );

  it('parses a full configuration with defaults filled in', () => {
    const c = parseProxyConfig(`
admin: { address: "127.0.0.1:0" }
listeners:
  - { name: web, address: "127.0.0.1:0", protocol: http, recycle: { maxRequestsPerConnection: 100 } }
  - { name: db, address: "127.0.0.1:0", protocol: tcp, cluster: pg, balance: maglev, maxConnectionAgeMs: 60000 }
clusters:
  - { name: api, target: "static:///127.0.0.1:9000", policy: round-robin, lifetime: { maxConnectionAgeMs: 30000 } }
  - { name: grpc, target: "static:///127.0.0.1:9001", protocol: h2 }
  - { name: pg, target: "static:///127.0.0.1:5432", policy: maglev }
routes:
  - { hosts: [api.example], pathPrefix: /v1, cluster: api }
  - { hosts: ["*"], cluster: grpc }
`);
    expect(c.listeners[0]?.limits.maxHeaderBytes).toBe(16_384);
    expect(c.listeners[1]?.balance).toBe('maglev');
    expect(c.clusters[0]?.retries).toEqual({ connectFailures: 2, idempotent: 1, on: [502, 503, 504] });
    expect(c.clusters[1]?.protocol).toBe('h2');
    expect(c.routes[0]?.pathPrefix).toBe('/v1');
    expect(c.listeners[0]?.trustForwardedHeaders).toBe(false);
  });
});

describe('proxy reload', () => {
  let a: Backend;
  let b: Backend;
  let child: ChildProcess | undefined;
  let stderr = '';

  beforeAll(async () => {
    a = await startBackend('a', '127.0.0.31');
    b = await startBackend('b', '127.0.0.32');
  });

  afterAll(async () => {
    if (child !== undefined && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child?.once('exit', r));
    }
    await a.close();
    await b.close();
  });

  function get(port: number, agent: http.Agent | false = false): Promise<string> {
    return new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
          res.setEncoding('utf8');
          let body = '';
          const localPort = res.socket.localPort;
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve(agent === false ? body : `${body}@${localPort}`));
        })
        .on('error', reject);
    });
  }

  it('reloads on SIGHUP and on file change; a bad reload keeps the running config', async () => {
    const file = join(dir, 'proxy.yaml');
    const probe = spawnSync(
      process.execPath,
      [
        '-e',
        'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})',
      ],
      { encoding: 'utf8' },
    );
    const port = Number(probe.stdout.trim());
    const write = (target: string): void => {
      const tmp = `${file}.tmp`;
      writeFileSync(
        tmp,
        `listeners: [{ name: web, address: "127.0.0.1:${port}" }]\nclusters: [{ name: app, target: "static:///${target}" }]\n`,
      );
      renameSync(tmp, file);
    };
    write(a.key);
    child = spawn(process.execPath, [cli, 'proxy', '--config', file], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (c: string) => (stderr += c));
    await waitFor(() => stderr.includes('proxy started'), 10_000, 'proxy start');
    expect(await get(port)).toBe('a 0\n');
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const [bodyBefore, socketBefore] = (await get(port, keepAlive)).split('@');
    expect(bodyBefore).toBe('a 0\n');

    // SIGHUP after rewriting the file: traffic moves to b (the watcher may reload first; either way).
    write(b.key);
    child.kill('SIGHUP');
    await waitFor(async () => (await get(port)) === 'b 0\n', 5000, 'reload to b');
    // The client's keep-alive connection survived the reload and now reaches b.
    expect(await get(port, keepAlive)).toBe(`b 0\n@${socketBefore}`);
    keepAlive.destroy();

    // A bad file: the running configuration stays, the reason is logged.
    writeFileSync(file, 'listeners: [{ address: "127.0.0.1:1", protocol: quic }]\nclusters: []\n');
    child.kill('SIGHUP');
    await waitFor(() => stderr.includes('reload failed; keeping the running configuration'), 5000, 'failed reload log');
    expect(stderr).toMatch(/listeners\[0\]\.protocol/);
    expect(await get(port)).toBe('b 0\n');
    expect(child.exitCode).toBeNull();

    // A file change alone (no signal) reloads too.
    write(a.key);
    await waitFor(async () => (await get(port)) === 'a 0\n', 5000, 'file-change reload to a');
  });
});
