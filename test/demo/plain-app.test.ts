/**
 * The `sidecar` phase's app is a plain server — the thing a user has before evenlb: the built
 * `dist/demo/plain-app.js` imports Node's own modules and nothing else (no evenlb code, no
 * dynamic import or require), and it serves: started as the demo starts it, it answers HTTP
 * requests with keep-alive, and reports its count when asked. The phase itself runs in `sidecar-phase.test.ts`.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './demo-helpers.js';

const appPath = join(repoRoot, 'dist', 'demo', 'plain-app.js');

describe('the sidecar phase app', () => {
  it('imports Node built-ins only', () => {
    if (!existsSync(appPath)) throw new Error('build first: npx tsup');
    const app = readFileSync(appPath, 'utf8');
    const imports = [...app.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
    expect(imports.length).toBeGreaterThan(0);
    for (const i of imports) expect(builtinModules, `plain-app.js imports ${i}`).toContain(i?.replace(/^node:/, ''));
    expect(app).not.toMatch(/\brequire\(|import\(/);
  });

  it('serves keep-alive requests with its name and counts all but the warm-up ones', async () => {
    const child = spawn(process.execPath, [appPath, '--name', 'pod-x', '--address', '127.0.0.1', '--port', '0'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    try {
      const lines: Record<string, unknown>[] = [];
      let buffered = '';
      const next = (type: string): Promise<Record<string, unknown>> =>
        new Promise((resolve, reject) => {
          const deadline = setTimeout(() => reject(new Error(`no ${type} line from plain-app.js`)), 10_000);
          const look = (): void => {
            const found = lines.find((l) => l.type === type);
            if (found === undefined) return void setTimeout(look, 20);
            clearTimeout(deadline);
            lines.splice(0, lines.indexOf(found) + 1);
            resolve(found);
          };
          look();
        });
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
          lines.push(JSON.parse(buffered.slice(0, i)) as Record<string, unknown>);
          buffered = buffered.slice(i + 1);
        }
      });
      const { port } = (await next('listening')) as { port: number };
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const sockets = new Set<unknown>();
      const get = (headers: Record<string, string>): Promise<string> =>
        new Promise((resolve, reject) => {
          http
            .get({ host: '127.0.0.1', port, path: '/', agent, headers }, (res) => {
              sockets.add(res.socket);
              let body = '';
              res.on('data', (c: Buffer) => {
                body += c.toString();
              });
              res.on('end', () => resolve(body));
            })
            .on('error', reject);
        });
      expect(await get({})).toBe('pod-x\n');
      expect(await get({ 'x-evenlb-demo-warm-up': '1' })).toBe('pod-x\n');
      expect(await get({})).toBe('pod-x\n');
      agent.destroy();
      expect(sockets.size).toBe(1);
      // Asked on stdin (a line), it reports its count: 2 — the warm-up request is not counted.
      child.stdin.write('stats\n');
      expect((await next('stats')).requests).toBe(2);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
