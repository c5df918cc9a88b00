/**
 * A reload is a transaction, tried on `evenlb proxy` as a real child process (SIGHUP is the
 * CLI's): a configuration node:http cannot apply (`limits.requestTimeoutMs` below the head
 * deadline) exits 2 at start naming the field, and on SIGHUP fails without touching anything —
 * the listener keeps serving during and after, `/readyz` stays 200, and the next good file
 * reloads; a reload that changes a listener and adds one on a port another process holds
 * fails and leaves every old listener serving; a valid change of a listener on the same
 * address refuses no connection while requests keep arriving. Loads are bounded in count and
 * time; each request opens its own connection, so a listener that stopped accepting shows. An
 * address another process holds at start exits 1, naming the field.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildCli } from '../support/run-cli.js';
import { freePort } from '../support/tracked-server.js';
import { type Backend, fetchText, startBackend, waitFor } from './helpers.js';

let cli = '';
let dir = '';
let backend: Backend;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  cli = buildCli();
  dir = mkdtempSync(join(tmpdir(), 'evenlb-proxy-reload-'));
  backend = await startBackend('app', '127.0.0.1');
});

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

afterAll(async () => {
  await backend.close();
  rmSync(dir, { recursive: true, force: true });
});

interface ListenerSpec {
  readonly name: string;
  readonly port: number;
  readonly extra?: string;
}

/** Writes the configuration file atomically (a rename, as a ConfigMap update does). */
function writeConfig(file: string, listeners: readonly ListenerSpec[]): void {
  const lines = listeners.map(
    (l) => `  - { name: ${l.name}, address: "127.0.0.1:${l.port}"${l.extra === undefined ? '' : `, ${l.extra}`} }`,
  );
  const text = [
    'admin: { address: "127.0.0.1:0" }',
    'listeners:',
    ...lines,
    `clusters: [{ name: app, target: "static:///${backend.key}" }]`,
    '',
  ].join('\n');
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

interface Running {
  readonly child: ChildProcess;
  readonly adminPort: number;
  /** Everything the proxy wrote to stderr so far. */
  stderr(): string;
  /** How often `text` occurs in stderr so far. */
  count(text: string): number;
}

async function startCli(file: string): Promise<Running> {
  const child = spawn(process.execPath, [cli, 'proxy', '--config', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  );
  await waitFor(() => stderr.includes('proxy started'), 15_000, 'proxy start');
  const started = stderr.split('\n').find((l) => l.includes('proxy started')) as string;
  return {
    child,
    adminPort: (JSON.parse(started) as { admin: number }).admin,
    stderr: () => stderr,
    count: (text) => stderr.split(text).length - 1,
  };
}

/** One GET on a new connection; resolves with the status, or the error code. */
function get(port: number): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false, timeout: 5_000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(String(res.statusCode)));
      res.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

/**
 * `total` requests to `port`, `concurrency` at a time, each on a new connection; `during` runs
 * once `atDone` have completed. Resolves with each answer (status or error code).
 */
async function load(port: number, total: number, during?: { atDone: number; run: () => void }): Promise<string[]> {
  const answers: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      next++;
      answers.push(await get(port));
      if (during !== undefined && answers.length === during.atDone) during.run();
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return answers;
}

const ok = (answers: readonly string[]): number => answers.filter((a) => a === '200').length;

async function readyz(adminPort: number): Promise<{ status: number; body: string }> {
  const r = await fetchText(adminPort, '/readyz');
  return { status: r.status, body: r.body };
}

describe('evenlb proxy: a reload that cannot be applied changes nothing', () => {
  it('limits.requestTimeoutMs below the head deadline: exit 2 at start naming the field; on SIGHUP the listener keeps serving, /readyz 200, and the restored file reloads', async () => {
    const port = await freePort();
    const bad = join(dir, 'bad.yaml');
    writeConfig(bad, [{ name: 'web', port, extra: 'limits: { requestTimeoutMs: 5000 }' }]);
    const start = spawnSync(process.execPath, [cli, 'proxy', '--config', bad], { encoding: 'utf8', timeout: 15_000 });
    expect(start.status).toBe(2);
    expect(start.stderr).toMatch(
      /"listeners\[0\]\.limits\.requestTimeoutMs" must be 0 \(no limit\) or at least listeners\[0\]\.limits\.headersTimeoutMs \(10000 ms\).*; received 5000/,
    );
    // Nothing listened.
    expect(await get(port)).toBe('ECONNREFUSED');

    const file = join(dir, 'a.yaml');
    const good: ListenerSpec[] = [{ name: 'web', port }];
    writeConfig(file, good);
    const proxy = await startCli(file);
    expect(ok(await load(port, 100))).toBe(100);

    const failed = 'reload failed; keeping the running configuration';
    const during = await load(port, 100, {
      atDone: 30,
      run: () => {
        writeConfig(file, [{ name: 'web', port, extra: 'limits: { requestTimeoutMs: 5000 }' }]);
        proxy.child.kill('SIGHUP');
      },
    });
    await waitFor(() => proxy.count(failed) >= 1, 10_000, 'the failed reload');
    expect(proxy.stderr()).toMatch(/listeners\[0\]\.limits\.requestTimeoutMs/);
    expect(ok(during)).toBe(100);
    expect(ok(await load(port, 100))).toBe(100);
    expect(await readyz(proxy.adminPort)).toEqual({ status: 200, body: 'ready\n' });

    // The restored file reloads (SIGHUP; the file watcher may reload it too).
    const reloaded = proxy.count('configuration reloaded');
    writeConfig(file, [{ name: 'web', port, extra: 'limits: { idleTimeoutMs: 30000 }' }]);
    proxy.child.kill('SIGHUP');
    await waitFor(() => proxy.count('configuration reloaded') > reloaded, 10_000, 'the reload');
    expect(ok(await load(port, 100))).toBe(100);
    expect(await readyz(proxy.adminPort)).toEqual({ status: 200, body: 'ready\n' });
    expect(proxy.child.exitCode).toBeNull();
  }, 90_000);

  it('a changed listener reloaded together with a new one on a port another process holds: the reload fails, every old listener serves', async () => {
    const [webPort, apiPort, heldPort] = [await freePort(), await freePort(), await freePort()];
    const holder = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => holder.listen(heldPort, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const file = join(dir, 'b.yaml');
    writeConfig(file, [
      { name: 'web', port: webPort },
      { name: 'api', port: apiPort },
    ]);
    const proxy = await startCli(file);
    const failed = 'reload failed; keeping the running configuration';
    const [web, api] = await Promise.all([
      load(webPort, 100, {
        atDone: 30,
        run: () => {
          writeConfig(file, [
            { name: 'web', port: webPort, extra: 'limits: { idleTimeoutMs: 30000 }' },
            { name: 'api', port: apiPort },
            { name: 'extra', port: heldPort },
          ]);
          proxy.child.kill('SIGHUP');
        },
      }),
      load(apiPort, 100),
    ]);
    await waitFor(() => proxy.count(failed) >= 1, 10_000, 'the failed reload');
    expect([ok(web), ok(api)]).toEqual([100, 100]);
    expect([ok(await load(webPort, 100)), ok(await load(apiPort, 100))]).toEqual([100, 100]);
    expect(proxy.stderr()).toMatch(/listeners\[2\]\.address.*EADDRINUSE/);
    expect(await readyz(proxy.adminPort)).toEqual({ status: 200, body: 'ready\n' });
  }, 90_000);
});

describe('evenlb proxy: an address another process holds at start', () => {
  it('exits 1 naming the field and the address, and leaves nothing listening', async () => {
    const [freeListener, heldPort] = [await freePort(), await freePort()];
    const holder = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => holder.listen(heldPort, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const file = join(dir, 'held.yaml');
    writeConfig(file, [
      { name: 'web', port: freeListener },
      { name: 'api', port: heldPort },
    ]);
    const r = spawnSync(process.execPath, [cli, 'proxy', '--config', file], { encoding: 'utf8', timeout: 15_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(`"listeners\\[1\\]\\.address" cannot listen on 127\\.0\\.0\\.1:${heldPort}: EADDRINUSE`),
    );
    expect(await get(freeListener)).toBe('ECONNREFUSED');
  }, 30_000);
});

describe('evenlb proxy: a valid change of a listener on the same address', () => {
  it('refuses no connection and fails no request while requests keep arriving', async () => {
    const port = await freePort();
    const file = join(dir, 'c.yaml');
    writeConfig(file, [{ name: 'web', port }]);
    const proxy = await startCli(file);
    const reloaded = 'configuration reloaded';
    let reloads = 0;
    const reload = (): void => {
      reloads++;
      writeConfig(file, [{ name: 'web', port, extra: `limits: { idleTimeoutMs: ${20_000 + reloads} }` }]);
      proxy.child.kill('SIGHUP');
    };
    // Three reloads, each under load: 4 clients opening a connection per request.
    const answers: string[] = [];
    for (let i = 0; i < 3; i++) {
      const before = proxy.count(reloaded);
      answers.push(...(await load(port, 150, { atDone: 50, run: reload })));
      await waitFor(() => proxy.count(reloaded) > before, 10_000, 'the reload');
      answers.push(...(await load(port, 50)));
    }
    const failures = answers.filter((a) => a !== '200');
    expect(failures).toEqual([]);
    expect(answers.length).toBe(600);
    expect(await readyz(proxy.adminPort)).toEqual({ status: 200, body: 'ready\n' });
  }, 120_000);
});
