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
import type { Command } from 'commander';
import { addSidecarOptions, type SidecarFlags } from './proxy-sidecar-flags.js';

/** The proxy's flags as commander hands them over (the sidecar's included). */
export interface ProxyCliOptions extends SidecarFlags {
  config?: string;
  listen?: string;
  upstream?: string;
  policy?: string;
  admin?: string;
  protocol?: 'http1' | 'h2';
  accessLog?: boolean;
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
      const { runProxyCommand } = await import('./proxy-run.js');
      await runProxyCommand(opts, command);
    });
  addSidecarOptions(command);
}
