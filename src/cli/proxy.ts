/**
 * `evenlb proxy`: the L7/L4 balancing proxy. Flags cover the simple case (one listener, one
 * upstream target); `--config FILE` takes the full YAML configuration. An invalid
 * configuration (a field, or fields that cannot hold together) exits with code 2 before
 * anything listens, and so does a `k8s:///` target that would read a kubeconfig while
 * @kubernetes/client-node is not installed; an address another process holds exits with code 1,
 * naming the field. With `--config`, SIGHUP and changes to the file reload it; a reload that
 * fails — invalid, or not appliable — changes nothing, keeps every listener serving and logs
 * `reload failed; keeping the running configuration` with the reason. SIGTERM and SIGINT drain
 * and stop.
 */
import { watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { ErrorCodes, isEvenlbError } from '../core/errors.js';
import { clientNodeInstalled, missingClientNode } from '../discovery/kubernetes/client-node-package.js';
import {
  describeConnection,
  resolveKubeConnectionConfig,
  SERVICE_ACCOUNT_DIR,
} from '../discovery/kubernetes/kube-connection.js';
import type { ProxyConfig } from '../proxy/config/config-schema.js';
import { configFromFlags, loadProxyConfigFile } from '../proxy/config/proxy-config.js';
import { ProxyServer } from '../proxy/proxy-server.js';
import { addSidecarOptions, type SidecarCli, type SidecarFlags, sidecarFromCli } from './proxy-sidecar.js';

interface ProxyCliOptions extends SidecarFlags {
  config?: string;
  listen?: string;
  upstream?: string;
  policy?: string;
  admin?: string;
  protocol?: 'http1' | 'h2';
  accessLog?: boolean;
}

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

export function registerProxyCommand(program: Command): void {
  const command = program
    .command('proxy')
    .description('Balance requests (HTTP/1.1, HTTP/2, gRPC) or connections (TCP) over a Service’s endpoints.')
    .option(
      '-c, --config <file>',
      'YAML configuration file (listeners, clusters, routes); reloaded on SIGHUP and change',
    )
    .option('--listen <host:port>', 'listen address for HTTP/1.1 and h2c', '127.0.0.1:8080')
    .option('--upstream <target>', 'upstream target URI: static:///, dns:///, k8s:///, file:///')
    .option('--policy <name>', 'balancing policy (default least-request)')
    .option('--protocol <http1|h2>', 'upstream protocol (h2 for gRPC)')
    .option('--admin <host:port>', 'admin listener: /metrics, /endpoints, /config, /healthz, /readyz, dashboard')
    .option('--access-log', 'log every request as JSON to stderr')
    .action(async (opts: ProxyCliOptions) => {
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
    });
  addSidecarOptions(command);
}
