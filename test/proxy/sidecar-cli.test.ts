/**
 * `evenlb proxy --sidecar` as a real child process: flag combinations that cannot work exit 2
 * with a message naming the flag; the short YAML form (`--sidecar --config FILE`) starts a
 * sidecar that forwards to a plain app, reports ready once the app answers, and drains and
 * exits 0 on SIGTERM; a bad field in that file exits 2 naming it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, runCli } from '../support/run-cli.js';
import { freePort } from '../support/tracked-server.js';
import { fetchText, waitFor } from './helpers.js';
import { startPlainApp } from './sidecar-support.js';

let cli: string;
let dir: string;
beforeAll(() => {
  cli = buildCli('evenlb-sidecar-test');
  dir = mkdtempSync(join(tmpdir(), 'evenlb-sidecar-cli-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BASE = ['proxy', '--sidecar', '--listen', '127.0.0.1:0', '--peers', 'static:///127.0.0.1:1'];

describe('evenlb proxy --sidecar: usage errors', () => {
  // Every combination is checked in-process in src/cli/proxy-sidecar.test.ts; these few show
  // the exit code and the message reaching stderr.
  const cases: { args: string[]; flag: string; message: RegExp }[] = [
    { args: ['proxy', '--app', '127.0.0.1:8081'], flag: '--app', message: /--app is a sidecar flag: add --sidecar/ },
    {
      args: [...BASE, '--app', '127.0.0.1:8081', '--upstream', 'static:///127.0.0.1:9'],
      flag: '--upstream',
      message: /--upstream cannot be combined with --sidecar/,
    },
    {
      args: [...BASE, '--app', '127.0.0.1:8081', '--tls-cert', '/nonexistent.crt', '--tls-key', '/nonexistent.key'],
      flag: '--tls-cert',
      message: /--tls-cert: must name a readable file \(ENOENT\)/,
    },
    {
      args: [...BASE, '--app', '127.0.0.1:8081', '--load-metric', 'cpu'],
      flag: '--load-metric',
      message: /--load-metric <metric>' argument 'cpu' is invalid/,
    },
  ];
  it('exit 2 naming the flag', async () => {
    const runs = await Promise.all(cases.map((c) => runCli(cli, c.args, { timeoutMs: 60_000 })));
    runs.forEach((r, i) => {
      const c = cases[i] as (typeof cases)[number];
      expect(r.code, `${c.args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr, c.args.join(' ')).toMatch(c.message);
      expect(r.stderr).toContain(c.flag);
    });
  }, 120_000);

  it('a sidecar file with an unknown or bad field exits 2 naming it', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      'sidecar:\n  listen: ":0"\n  app: 127.0.0.1:8081\n  peers: static:///127.0.0.1:1\n  tolerence: 0.2\n',
    );
    const worse = join(dir, 'worse.yaml');
    writeFileSync(
      worse,
      'sidecar:\n  listen: ":0"\n  app: 127.0.0.1:8081\n  peers: static:///127.0.0.1:1\n  appCheck: { intervalMs: -1 }\n',
    );
    const [r1, r2] = await Promise.all(
      [bad, worse].map((f) => runCli(cli, ['proxy', '--sidecar', '--config', f], { timeoutMs: 60_000 })),
    );
    expect(r1?.code).toBe(2);
    expect(r1?.stderr).toMatch(/unknown option "tolerence"/);
    expect(r2?.code).toBe(2);
    expect(r2?.stderr).toMatch(/"appCheck\.intervalMs" must be a finite number >= 10; received -1/);
  }, 120_000);
});

describe('evenlb proxy --sidecar --config (the short YAML form)', () => {
  it('forwards to the app, is ready once it answers, drains and exits 0 on SIGTERM', async () => {
    const address = '127.0.0.111';
    const app = await startPlainApp(address, { name: 'plain-app' });
    try {
      const [listen, admin, loadPort] = [await freePort(address), await freePort(), await freePort(address)];
      const file = join(dir, 'sidecar.yaml');
      writeFileSync(
        file,
        [
          'sidecar:',
          `  listen: "${address}:${listen}"`,
          `  app: "http://${address}:${app.port}"`,
          `  peers: "static:///${address}:${listen}"`,
          `  self: "${address}"`,
          `  loadPort: ${loadPort}`,
          `  loadHost: "${address}"`,
          `  admin: "127.0.0.1:${admin}"`,
          '  appCheck: { kind: tcp, intervalMs: 100, timeoutMs: 80 }',
          '  fairShare: { tolerance: 0.2, loadMetric: connections }',
          '',
        ].join('\n'),
      );
      let body = '';
      let ready = 0;
      const run = await runCli(cli, ['proxy', '--sidecar', '--config', file], {
        timeoutMs: 60_000,
        onStderr: (text, child) => {
          if (ready !== 0 || !text.includes('app answers: ready')) return;
          ready = 1;
          void (async () => {
            await waitFor(async () => (await fetchText(admin, '/readyz')).status === 200, 10_000, 'ready');
            body = await new Promise<string>((resolve, reject) => {
              http
                .get({ host: address, port: listen, path: '/', headers: { host: 'app.test' }, agent: false }, (res) => {
                  let text = '';
                  res.setEncoding('utf8');
                  res.on('data', (c: string) => (text += c));
                  res.on('end', () => resolve(text));
                })
                .on('error', reject);
            });
            ready = 2;
            child.kill('SIGTERM');
          })().catch(() => child.kill('SIGKILL'));
        },
      });
      expect(run.code, run.stderr).toBe(0);
      expect(ready).toBe(2);
      expect(body).toBe('plain-app\n');
      expect(run.stderr).toMatch(/"listeners":\[\{"name":"sidecar","port":\d+\}\]/);
      expect(app.requests).toBe(1);
      expect(app.lastHeaders['x-forwarded-for']).toBe('127.0.0.1');
    } finally {
      await app.close();
    }
  }, 120_000);
});
