/**
 * Test support: TypeScript fixtures run as real child processes. `bundleFixture` compiles a
 * fixture (and the evenlb sources it imports) into one ESM file with esbuild — packages stay
 * external, so the file is written under the repository's node_modules/.cache where Node finds
 * them. `FixtureProcess` wraps the child: JSON lines on stdout become awaitable messages,
 * stdin takes JSON commands, and `exited` settles with the exit code or signal.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const outDir = join(repoRoot, 'node_modules', '.cache', 'evenlb-test-fixtures');

/**
 * Bundles `entry` (absolute path) into a runnable .mjs file in `into` (default: under the
 * repository's node_modules/.cache, where its packages resolve); returns its path.
 */
export async function bundleFixture(entry: string, into: string = outDir): Promise<string> {
  const tag = createHash('sha256').update(readFileSync(entry)).update(String(process.pid)).digest('hex').slice(0, 10);
  const outfile = join(into, `${basename(entry, '.ts')}-${tag}.mjs`);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'silent',
  });
  return outfile;
}

export type FixtureMessage = Record<string, unknown> & { readonly type?: string };

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A child process speaking JSON lines. */
export class FixtureProcess {
  readonly child: ChildProcess;
  readonly messages: FixtureMessage[] = [];
  readonly exited: Promise<ExitInfo>;
  stderr = '';
  readonly #waiters: { match: (m: FixtureMessage) => boolean; resolve: (m: FixtureMessage) => void }[] = [];

  constructor(child: ChildProcess) {
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (c: string) => {
      this.stderr = (this.stderr + c).slice(-4000);
    });
    if (child.stdout !== null) {
      createInterface({ input: child.stdout }).on('line', (line) => {
        let message: FixtureMessage;
        try {
          message = JSON.parse(line) as FixtureMessage;
        } catch {
          return;
        }
        this.messages.push(message);
        for (const w of [...this.#waiters]) {
          if (!w.match(message)) continue;
          this.#waiters.splice(this.#waiters.indexOf(w), 1);
          w.resolve(message);
        }
      });
    }
  }

  /** Runs `node bundle args` (or through `spawnFn`, e.g. inside a network namespace). */
  static start(bundle: string, args: readonly string[] = []): FixtureProcess {
    return new FixtureProcess(spawn(process.execPath, [bundle, ...args], { stdio: ['pipe', 'pipe', 'pipe'] }));
  }

  /** Resolves with the first message of `type` (already received or future) or rejects after `timeoutMs`. */
  waitFor(
    type: string,
    timeoutMs = 10_000,
    match: (m: FixtureMessage) => boolean = () => true,
  ): Promise<FixtureMessage> {
    return this.waitForMessage((m) => m.type === type && match(m), timeoutMs, `"${type}" message`);
  }

  /** Resolves with the first message (already received or future) satisfying `predicate`. */
  waitForMessage(predicate: (m: FixtureMessage) => boolean, timeoutMs: number, what: string): Promise<FixtureMessage> {
    const seen = this.messages.find(predicate);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(new Error(`no ${what} within ${timeoutMs} ms; stderr: ${this.stderr}`));
      }, timeoutMs);
      const waiter = {
        match: predicate,
        resolve: (m: FixtureMessage) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      this.#waiters.push(waiter);
      void this.exited.then(() => {
        if (!this.#waiters.includes(waiter)) return;
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        clearTimeout(timer);
        reject(new Error(`process exited before a ${what}; stderr: ${this.stderr}`));
      });
    });
  }

  /** Sends one JSON command line on stdin. */
  send(command: Record<string, unknown>): void {
    this.child.stdin?.write(`${JSON.stringify(command)}\n`);
  }

  /** Kills the process if still running and waits for it. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<ExitInfo> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}
