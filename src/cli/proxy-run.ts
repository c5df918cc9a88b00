/**
 * What `evenlb proxy` does once its flags are parsed: read the configuration (flags, `--config`
 * or `--sidecar`), start the proxy, reload on SIGHUP and on changes to the file, drain and stop on
 * SIGTERM and SIGINT. Loaded by the command's action only, so that `evenlb --help`, `evenlb sim`
 * and a usage error never load the proxy, its configuration schema or its logger. Exit codes as
 * `proxy.ts` says.
 */
import { watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { ErrorCodes, isEvenlbError } from '../core/errors.js';
import { clientNodeInstalled, missingClientNode } from '../discovery/kubernetes/client-node-package.js';
// Registers the k8s:/// scheme with createEndpointSource (clusters and fair-share peers use it).
import '../discovery/kubernetes/index.js';
import {
  describeConnection,
  resolveKubeConnectionConfig,
  SERVICE_ACCOUNT_DIR,
} from '../discovery/kubernetes/kube-connection.js';
import type { ProxyConfig } from '../proxy/config/config-schema.js';
import { configFromFlags, loadProxyConfigFile } from '../proxy/config/proxy-config.js';
import { ProxyServer } from '../proxy/proxy-server.js';
import type { ProxyCliOptions } from './proxy.js';
import { type SidecarCli, sidecarFromCli } from './proxy-sidecar.js';

/** True when a cluster or a listener's fair-share peers follow a `k8s:///` target. */
function usesKubernetes(config: ProxyConfig): boolean {
  const targets = [
    ...config.clusters.map((c) => c.target),
    ...config.listeners.map((l) => l.recycle?.fairShare?.peers ?? ''),
  ];
  return targets.some((t) => t.startsWith('k8s:'));
}

/** The API server configuration discovery will choose; undefined when there is none (discovery reports that). */
function kubeConnectionOrUndefined(): ReturnType<typeof resolveKubeConnectionConfig> | undefined {
  try {
    return resolveKubeConnectionConfig({ serviceAccountDir: SERVICE_ACCOUNT_DIR, env: process.env });
  } catch {
    return undefined;
  }
}

function usage(message: string): void {
  process.stderr.write(`evenlb proxy: ${message}\n`);
  process.exitCode = 2;
}

/**
 * Runs `evenlb proxy` with its parsed flags; resolves once the proxy serves (or the process
 * has its exit code).
 *
 * @example
 * await runProxyCommand({ upstream: 'static:///127.0.0.1:9000', listen: '127.0.0.1:8080' }, command);
 */
export async function runProxyCommand(opts: ProxyCliOptions, command: Command): Promise<void> {
  let config: ProxyConfig;
  let sidecar: SidecarCli | undefined;
  try {
    sidecar = sidecarFromCli(opts, command);
    if (sidecar !== undefined) config = sidecar.config;
    else if (opts.config !== undefined) {
      if (opts.upstream !== undefined) return usage('--config and --upstream cannot be combined');
      config = loadProxyConfigFile(opts.config);
    } else {
      if (opts.upstream === undefined) return usage('either --config FILE or --upstream TARGET is required');
      if (opts.protocol !== undefined && opts.protocol !== 'http1' && opts.protocol !== 'h2') {
        return usage(`--protocol must be "http1" or "h2"; received ${JSON.stringify(opts.protocol)}`);
      }
      config = configFromFlags({
        listen: opts.listen ?? '127.0.0.1:8080',
        upstream: opts.upstream,
        ...(opts.policy === undefined ? {} : { policy: opts.policy }),
        ...(opts.admin === undefined ? {} : { admin: opts.admin }),
        ...(opts.protocol === undefined ? {} : { protocol: opts.protocol }),
        ...(opts.accessLog === undefined ? {} : { accessLog: opts.accessLog }),
      });
    }
  } catch (err) {
    if (isEvenlbError(err)) return usage(err.message);
    throw err;
  }
  if (usesKubernetes(config) && !clientNodeInstalled()) {
    const kube = kubeConnectionOrUndefined();
    if (kube?.type === 'kubeconfig') return usage(missingClientNode(describeConnection(kube)).message);
  }
  let proxy: ProxyServer;
  try {
    proxy = await ProxyServer.start(config, sidecar?.proxyOptions);
  } catch (err) {
    // A file that broke between validation and start is still a configuration error (2);
    // an address another process holds is the machine's state, not the file's (1).
    if (isEvenlbError(err, ErrorCodes.INVALID_CONFIG)) return usage(err.message);
    if (!isEvenlbError(err, ErrorCodes.LISTEN_FAILED)) throw err;
    process.stderr.write(`evenlb proxy: ${err.message}\n`);
    process.exitCode = 1;
    return;
  }
  const load = sidecar?.load ?? loadProxyConfigFile;
  const file = opts.config;
  if (file !== undefined) {
    let pending: NodeJS.Timeout | undefined;
    // One message for every failed reload (the file is invalid, or applying it failed):
    // nothing of it was applied, every running listener keeps serving.
    const failed = (why: string, stage: 'validate' | 'apply', err: unknown): void => {
      proxy.logger.error(
        { file, trigger: why, stage, err: (err as Error).message },
        'reload failed; keeping the running configuration',
      );
    };
    const reload = (why: string): void => {
      let next: ProxyConfig;
      try {
        next = load(file);
      } catch (err) {
        proxy.metrics.reloads.inc({ result: 'invalid' });
        failed(why, 'validate', err);
        return;
      }
      proxy.reload(next).then(
        () => undefined,
        (err: unknown) => failed(why, 'apply', err),
      );
    };
    process.on('SIGHUP', () => reload('SIGHUP'));
    try {
      // Watch the directory: editors and ConfigMap updates replace the file (a new inode).
      const name = basename(file);
      const watcher = watch(dirname(resolve(file)), { persistent: false }, (_event, changed) => {
        if (changed !== null && changed !== name && !changed.startsWith('..')) return;
        if (pending !== undefined) clearTimeout(pending);
        pending = setTimeout(() => reload('file-change'), 200);
        pending.unref();
      });
      watcher.on('error', () => {});
    } catch {
      proxy.logger.warn({ file }, 'cannot watch the configuration file; reload with SIGHUP');
    }
  }
  const stop = (signal: string): void => {
    proxy.logger.info({ signal }, 'draining');
    proxy.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
