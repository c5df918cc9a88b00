/**
 * A network namespace playing one Kubernetes node's kube-proxy (iptables mode) for one
 * Service: a ClusterIP-like VIP inside 127.0.0.0/8 whose connections are DNATed, one random
 * pick per connection, to endpoints ("pods") bound to other loopback addresses in the same
 * namespace. Processes started with `spawn()` run inside it (`ip netns exec`), so clients,
 * servers and rules never touch the host's network.
 *
 * The namespace is always removed: by `close()`, and — if the process ends first — on `exit`,
 * SIGINT and SIGTERM (children are killed, `ip netns del` runs synchronously). Only a SIGKILL
 * of this process can leave it behind (`ip netns list` shows it; `ip netns del NAME` removes it).
 *
 * @example
 * const ns = await KubeProxyNamespace.create({ vip: '127.100.0.1', port: 80 });
 * try {
 *   const pod = ns.spawn(process.execPath, ['backend.mjs', '127.0.1.1', '8080']);
 *   await ns.syncEndpoints([{ address: '127.0.1.1', port: 8080 }]);
 *   // ns.spawn(...) a client that connects to http://127.100.0.1:80
 * } finally {
 *   await ns.close();
 * }
 */
import { type ChildProcess, execFile, execFileSync, type SpawnOptions, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { opt, parseOptions } from '../core/options.js';
import { renderKubeProxyRules, type ServiceEndpoint } from './kube-proxy-rules.js';
import { type NetfilterTool, netfilterSupport, resolveTool } from './netfilter-support.js';

const COMPONENT = 'KubeProxyNamespace';
const NAME_RE = /^[a-z0-9][a-z0-9-]{0,30}$/;
const COMMAND_TIMEOUT_MS = 10_000;
/** How long spawned children get after SIGTERM before SIGKILL. */
const KILL_GRACE_MS = 2000;

const isNamespaceName = (v: unknown): v is string => typeof v === 'string' && NAME_RE.test(v);
const isLoopbackIPv4 = (v: unknown): v is string => typeof v === 'string' && isIPv4(v) && v.startsWith('127.');

const optionsSpec = {
  /** Namespace name; default `evenlb-<pid>-<random>`. */
  name: opt.custom('a namespace name (lowercase letters, digits, "-", at most 31)', isNamespaceName, {
    optional: true,
  }),
  /** The Service VIP, inside 127.0.0.0/8 (the namespace has only `lo`). */
  vip: opt.custom('an IPv4 address in 127.0.0.0/8', isLoopbackIPv4, { default: '127.100.0.1' }),
  port: opt.int({ min: 1, max: 65_535, default: 80 }),
  /** kube-proxy's ServicePortName, used in chain names and comments. */
  servicePortName: opt.string({ nonEmpty: true, default: 'default/evenlb:http' }),
};

export interface KubeProxyNamespaceOptions {
  readonly name?: string;
  readonly vip?: string;
  readonly port?: number;
  readonly servicePortName?: string;
}

/** Namespaces alive in this process, for the exit and signal cleanup. */
const live = new Set<KubeProxyNamespace>();

function failure(message: string, cause?: unknown, details: Record<string, unknown> = {}): EvenlbError {
  return new EvenlbError(ErrorCodes.NETFILTER_FAILED, `${COMPONENT}: ${message}`, { cause, details });
}

function tool(name: NetfilterTool): string {
  const path = resolveTool(name);
  if (path === undefined) throw failure(`"${name}" not found`);
  return path;
}

/** Runs a command; rejects with NETFILTER_FAILED carrying its stderr. */
function run(file: string, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { timeout: COMMAND_TIMEOUT_MS }, (err, stdout, stderr) => {
      if (err === null) resolve(stdout);
      else {
        const detail = stderr.trim() || err.message;
        reject(failure(`${[file, ...args].join(' ')} failed: ${detail}`, err, { command: file, args }));
      }
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

export class KubeProxyNamespace {
  readonly name: string;
  readonly vip: string;
  readonly port: number;
  readonly servicePortName: string;
  readonly #ip: string;
  readonly #children = new Set<ChildProcess>();
  /** Children spawned `detached` lead their own process group: they are signalled with their group, so their own children go too. */
  readonly #groupLeaders = new WeakSet<ChildProcess>();
  #endpoints: readonly ServiceEndpoint[] = [];
  #endpointChains: readonly string[] = [];
  #sync: Promise<void> = Promise.resolve();
  #closing: Promise<void> | undefined;

  private constructor(name: string, vip: string, port: number, servicePortName: string) {
    this.name = name;
    this.vip = vip;
    this.port = port;
    this.servicePortName = servicePortName;
    this.#ip = tool('ip');
  }

  /**
   * Creates the namespace (loopback up, kube-proxy's `KUBE-SERVICES` hooked into nat OUTPUT and
   * PREROUTING) with no endpoints yet. Fails with `EVENLB_NETFILTER_FAILED` when
   * `netfilterSupport()` is not ok or a command fails; nothing is left behind on failure.
   */
  static async create(options: KubeProxyNamespaceOptions = {}): Promise<KubeProxyNamespace> {
    const o = parseOptions(COMPONENT, options, optionsSpec);
    const support = netfilterSupport();
    if (!support.ok) throw failure(support.reason);
    const name = o.name ?? `evenlb-${process.pid}-${randomBytes(3).toString('hex')}`;
    const ns = new KubeProxyNamespace(name, o.vip, o.port, o.servicePortName);
    await run(ns.#ip, ['netns', 'add', name]);
    track(ns);
    try {
      await ns.#exec('ip', ['link', 'set', 'lo', 'up']);
      const hooks = [
        '*nat',
        ':KUBE-SERVICES - [0:0]',
        '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        'COMMIT',
        '',
      ].join('\n');
      await ns.#exec('iptables-restore', ['--noflush'], hooks);
    } catch (err) {
      await ns.close();
      throw err;
    }
    return ns;
  }

  /** The endpoints of the last successful sync, in rule order. */
  get endpoints(): readonly ServiceEndpoint[] {
    return this.#endpoints;
  }

  /**
   * Starts `command args` inside the namespace. The child is killed by `close()` — with its
   * process group when it is spawned `detached` (it leads one), so what it started goes too.
   *
   * @example
   * const client = ns.spawn(process.execPath, ['client.mjs'], { stdio: ['pipe', 'pipe', 'inherit'] });
   */
  spawn(command: string, args: readonly string[] = [], options: SpawnOptions = {}): ChildProcess {
    if (this.#closing !== undefined) {
      throw new EvenlbError(ErrorCodes.CLOSED, `${COMPONENT}: namespace ${this.name} is closed`);
    }
    const child = spawn(this.#ip, ['netns', 'exec', this.name, command, ...args], options);
    if (options.detached === true) this.#groupLeaders.add(child);
    this.#children.add(child);
    child.once('exit', () => this.#children.delete(child));
    child.once('error', () => this.#children.delete(child));
    return child;
  }

  /**
   * Rewrites the Service's rules for `endpoints`, as kube-proxy does on an EndpointSlice
   * change: one `iptables-restore --noflush` transaction. Existing connections keep their
   * endpoint (conntrack); only new connections see the new set. Syncs run one at a time.
   */
  syncEndpoints(endpoints: readonly ServiceEndpoint[]): Promise<void> {
    for (const e of endpoints) {
      if (!isLoopbackIPv4(e.address) || !Number.isInteger(e.port) || e.port < 1 || e.port > 65_535) {
        return Promise.reject(
          new EvenlbError(
            ErrorCodes.INVALID_OPTION,
            `${COMPONENT}: endpoint must be { address: IPv4 in 127.0.0.0/8, port: 1..65535 }; received ${JSON.stringify(e)}`,
            { details: { component: COMPONENT, field: 'endpoints' } },
          ),
        );
      }
    }
    const next = this.#sync.then(async () => {
      if (this.#closing !== undefined) throw new EvenlbError(ErrorCodes.CLOSED, `${COMPONENT}: ${this.name} is closed`);
      const rules = renderKubeProxyRules({
        servicePortName: this.servicePortName,
        clusterIp: this.vip,
        port: this.port,
        endpoints,
        previousEndpointChains: this.#endpointChains,
      });
      await this.#exec('iptables-restore', ['--noflush'], rules.text);
      this.#endpoints = rules.endpoints;
      this.#endpointChains = rules.endpointChains;
    });
    this.#sync = next.catch(() => {});
    return next;
  }

  /** The namespace's nat table as `iptables-save` prints it (for logs and tests). */
  natRules(): Promise<string> {
    return this.#exec('iptables-save', ['-t', 'nat']);
  }

  /** Kills the spawned children and deletes the namespace. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    await this.#sync;
    const children = [...this.#children];
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => this.#kill(child, 'SIGKILL'), KILL_GRACE_MS);
            timer.unref();
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            this.#kill(child, 'SIGTERM');
          }),
      ),
    );
    try {
      await run(this.#ip, ['netns', 'del', this.name]);
    } finally {
      untrack(this);
    }
  }

  /** Synchronous last-resort cleanup (process exit). */
  destroySync(): void {
    for (const child of this.#children) this.#kill(child, 'SIGKILL');
    try {
      execFileSync(this.#ip, ['netns', 'del', this.name], { stdio: 'ignore', timeout: COMMAND_TIMEOUT_MS });
    } catch {
      // already gone
    }
    untrack(this);
  }

  /** Signals a child, with its process group when it leads one. */
  #kill(child: ChildProcess, signal: NodeJS.Signals): void {
    if (this.#groupLeaders.has(child) && child.pid !== undefined) {
      try {
        process.kill(-child.pid, signal);
        return;
      } catch {
        // The group is gone already: signal the child alone.
      }
    }
    child.kill(signal);
  }

  #exec(command: NetfilterTool, args: readonly string[], input?: string): Promise<string> {
    return run(this.#ip, ['netns', 'exec', this.name, tool(command), ...args], input);
  }
}

function onExit(): void {
  for (const ns of [...live]) ns.destroySync();
}

function onSignal(signal: NodeJS.Signals): void {
  onExit();
  // Our handler suppressed the default action; restore it when nobody else handles the signal.
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function track(ns: KubeProxyNamespace): void {
  if (live.size === 0) {
    process.on('exit', onExit);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  live.add(ns);
}

function untrack(ns: KubeProxyNamespace): void {
  if (!live.delete(ns) || live.size > 0) return;
  process.removeListener('exit', onExit);
  process.removeListener('SIGINT', onSignal);
  process.removeListener('SIGTERM', onSignal);
}
