/**
 * Running the `evenlb` CLI as a real child process in tests: `buildCli` bundles the CLI from
 * the sources once per test file (esbuild, dependencies external) so tests do not depend on a
 * stale dist/, and `runCli` runs a CLI file with arguments under a deadline, collecting its
 * exit code, signal, stdout and stderr.
 *
 * @example
 * const cli = buildCli();
 * const r = await runCli(cli, ['sim', '--list'], { timeoutMs: 60_000 });
 * expect(r.code).toBe(0);
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root folder. */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Bundles src/cli/main.ts to `node_modules/.cache/<cacheName>/cli.mjs` and returns that path;
 * each test area uses its own `cacheName`.
 */
export function buildCli(cacheName = 'evenlb-test'): string {
  const out = join(repoRoot, 'node_modules', '.cache', cacheName, 'cli.mjs');
  mkdirSync(dirname(out), { recursive: true });
  const r = spawnSync(
    join(repoRoot, 'node_modules', '.bin', 'esbuild'),
    [
      join(repoRoot, 'src', 'cli', 'main.ts'),
      '--bundle',
      '--platform=node',
      '--format=esm',
      '--target=node20',
      '--packages=external',
      `--outfile=${out}`,
      '--log-level=error',
    ],
    { cwd: repoRoot, encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`esbuild failed: ${r.stderr}`);
  return out;
}

/** How a CLI run ended and what it wrote. */
export interface CliRun {
  readonly pid: number | undefined;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunCliOptions {
  /** The run is killed (SIGKILL) and the promise rejected after this long. */
  readonly timeoutMs: number;
  /** Sees all stderr so far as it arrives (to send signals mid-run). */
  readonly onStderr?: (text: string, child: ChildProcess) => void;
  /**
   * `close` (default): resolve once the process exited and its output is closed. `exit`:
   * resolve when the process exits, for commands whose children may keep the pipes open.
   */
  readonly until?: 'close' | 'exit';
  /** The child's environment (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
}

/** Runs `node <cli> ...args` in the repository root. */
export function runCli(cli: string, args: readonly string[], options: RunCliOptions): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.env === undefined ? {} : { env: options.env }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
      options.onStderr?.(stderr, child);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`evenlb ${args.join(' ')} did not finish within ${options.timeoutMs} ms:\n${stderr}`));
    }, options.timeoutMs);
    child.on('error', reject);
    child.on(options.until ?? 'close', (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      resolve({ pid: child.pid, code, signal, stdout, stderr });
    });
  });
}
