/**
 * Helpers for the demo's integration tests: run the built CLI as a child process, find processes
 * a demo run left behind (by the run id every demo child carries in its environment and
 * arguments), and check that nothing listens any more on the pods' addresses.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cliPath = join(repoRoot, 'dist', 'cli', 'main.js');

export interface CliRun {
  readonly pid: number | undefined;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `node dist/cli/main.js ...args`; `onStderr` sees stderr as it arrives (to send signals mid-run). */
export function runCli(
  args: readonly string[],
  options: { timeoutMs: number; onStderr?: (text: string, child: import('node:child_process').ChildProcess) => void },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
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
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ pid: child.pid, code, signal, stdout, stderr });
    });
  });
}

/** PIDs of live processes whose environment or arguments carry the demo run id. */
export function demoProcesses(runId: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (cmdline.includes(`--evenlb-demo\0${runId}`) || environ.split('\0').includes(`EVENLB_DEMO_RUN=${runId}`)) {
        found.push(Number(entry));
      }
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** Polls until `check` returns true or `timeoutMs` passes; returns the last answer. */
export async function eventually(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** True when a TCP connection to host:port is accepted. */
export function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Named network namespaces (`ip netns list`), empty when iproute2 is missing. */
export function netnsList(): string[] {
  try {
    return readdirSync('/run/netns');
  } catch {
    return [];
  }
}
