/**
 * The orchestrator's handle on one child process (a pod, the load process, the proxy). Every
 * child is spawned in its own process group and registered in one place, so that a normal end,
 * an error, Ctrl-C or even `process.exit` kills the whole group: no demo process outlives the
 * demo. Messages arrive as JSON lines (see `child-channel.ts`); `next(type)` awaits one.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { systemClock } from '../core/clock.js';
import { readJsonLines, writeJsonLine } from './child-channel.js';

/** Starts a command; the default runs it on the host, `--dataplane netfilter` runs it in a netns. */
export type Spawner = (command: string, args: readonly string[]) => ChildProcess;

export const hostSpawner: Spawner = (command, args) =>
  spawn(command, [...args], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });

const live = new Set<DemoChild>();
let exitHookInstalled = false;

/** Kills every live child's process group with SIGKILL; safe to call from an `exit` handler. */
export function killAllChildren(): void {
  for (const child of live) child.kill('SIGKILL');
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', killAllChildren);
}

type Listener = (message: Record<string, unknown>) => void;

export class DemoChild {
  readonly name: string;
  readonly process: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #stderrTail: string[] = [];
  readonly #listeners = new Set<Listener>();
  #exited = false;

  constructor(name: string, command: string, args: readonly string[], spawner: Spawner = hostSpawner) {
    installExitHook();
    this.name = name;
    this.process = spawner(command, args);
    live.add(this);
    this.exited = new Promise((resolve) => {
      this.process.once('exit', (code, signal) => {
        this.#exited = true;
        live.delete(this);
        resolve({ code, signal });
      });
      this.process.once('error', () => {
        this.#exited = true;
        live.delete(this);
        resolve({ code: null, signal: null });
      });
    });
    if (this.process.stdout) {
      readJsonLines(this.process.stdout, (m) => {
        for (const l of [...this.#listeners]) l(m);
      });
    }
    this.process.stderr?.setEncoding('utf8');
    this.process.stderr?.on('data', (chunk: string) => {
      this.#stderrTail.push(...chunk.split('\n').filter((l) => l.trim() !== ''));
      if (this.#stderrTail.length > 20) this.#stderrTail.splice(0, this.#stderrTail.length - 20);
    });
    this.process.stdin?.on('error', () => {});
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get hasExited(): boolean {
    return this.#exited;
  }

  /** The last lines the child wrote to stderr, for error messages. */
  get stderrTail(): string {
    return this.#stderrTail.join('\n');
  }

  /** Calls `listener` for every message; returns an unsubscribe function. */
  on(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  send(message: object): void {
    if (this.process.stdin) writeJsonLine(this.process.stdin, message);
  }

  /**
   * Resolves with the next message of `type`; rejects when the child exits first, reports an
   * `error` message, or `timeoutMs` passes.
   */
  next(type: string, timeoutMs: number): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const done = (): void => {
        off();
        timer.cancel();
      };
      const off = this.on((m) => {
        if (m.type === type) {
          done();
          resolve(m);
        } else if (m.type === 'error') {
          done();
          reject(new Error(`${this.name}: ${String(m.message)}`));
        }
      });
      const timer = systemClock.setTimeout(() => {
        off();
        reject(new Error(`${this.name}: no "${type}" within ${timeoutMs} ms${this.#tail()}`));
      }, timeoutMs);
      void this.exited.then(({ code, signal }) => {
        done();
        reject(new Error(`${this.name} exited (${signal ?? code}) before "${type}"${this.#tail()}`));
      });
    });
  }

  #tail(): string {
    const t = this.stderrTail;
    return t === '' ? '' : `:\n${t}`;
  }

  /** Sends `signal` to the child's process group (and the child itself). Idempotent. */
  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (this.#exited) return;
    const pid = this.process.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // Not a group leader (a custom spawner): signal the process alone.
      try {
        process.kill(pid, signal);
      } catch {
        // Already gone.
      }
    }
  }

  /** Waits for the child to exit by itself; kills its group if it is still there after `timeoutMs`. */
  async waitExit(timeoutMs: number): Promise<void> {
    if (this.#exited) return;
    const timer = systemClock.setTimeout(() => this.kill('SIGKILL'), timeoutMs);
    await this.exited;
    timer.cancel();
  }

  /** Closes stdin (the child exits by itself) and kills the group if it lingers past `graceMs`. */
  async terminate(graceMs = 2000): Promise<void> {
    if (this.#exited) return;
    this.process.stdin?.end();
    await this.waitExit(graceMs);
  }
}
