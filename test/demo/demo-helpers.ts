/**
 * Helpers for the demo's integration tests: run the built CLI as a child process, find processes
 * a demo run left behind (by the run id every demo child carries in its environment and
 * arguments), and check that nothing listens any more on the pods' addresses.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { type CliRun, type RunCliOptions, repoRoot, runCli } from '../support/run-cli.js';

export { repoRoot };
export const cliPath = join(repoRoot, 'dist', 'cli', 'main.js');

/**
 * Runs `node dist/cli/main.js ...args` until the process exits (demo children it leaves behind
 * may still hold its pipes).
 */
export function runBuiltCli(args: readonly string[], options: Omit<RunCliOptions, 'until'>): Promise<CliRun> {
  return runCli(cliPath, args, { ...options, until: 'exit' });
}

/**
 * Runs `evenlb ...args` (a demo) and sends it SIGINT, as Ctrl-C would, once pods and clients
 * are up (its first live `max/mean` line); `sigintSent` says whether that happened.
 */
export async function runDemoInterruptedWhenLive(
  args: readonly string[],
  timeoutMs: number,
): Promise<CliRun & { readonly sigintSent: boolean }> {
  let sent = false;
  const run = await runBuiltCli(args, {
    timeoutMs,
    onStderr: (text, child) => {
      if (!sent && /max\/mean/.test(text)) {
        sent = true;
        child.kill('SIGINT');
      }
    },
  });
  return { ...run, sigintSent: sent };
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
