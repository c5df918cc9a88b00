/**
 * The flags of `evenlb proxy --sidecar` as declared on the command — their names, help and value
 * parsers — and the shape commander hands them over in. What they become (a configuration, the
 * app's check, usage errors naming a flag) is `proxy-sidecar.ts`, loaded only when the command
 * runs: declaring them loads nothing but commander.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { parseDuration } from './parse-duration.js';

/** The sidecar's flags as commander hands them over (camel-cased), with the proxy flags they meet. */
export interface SidecarFlags {
  sidecar?: boolean;
  config?: string;
  listen?: string;
  upstream?: string;
  policy?: string;
  protocol?: string;
  admin?: string;
  accessLog?: boolean;
  app?: string;
  peers?: string;
  loadPort?: number;
  podIp?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsClientCa?: string;
  appCa?: string;
  appServerName?: string;
  appCheck?: string;
  appCheckInterval?: number;
  appCheckTimeout?: number;
  tolerance?: number;
  loadMetric?: string;
  metrics?: string;
  trustForwarded?: boolean;
  drainTimeout?: number;
  /** `--load-report` alone: true; with a number: the app's `maxInFlight`. */
  loadReport?: boolean | number;
}

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > 65535) throw new InvalidArgumentError('expected a port 1..65535.');
  return n;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1) throw new InvalidArgumentError('expected an integer >= 1.');
  return n;
}

function fraction(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number >= 0.');
  return n;
}

/**
 * Adds the sidecar's flags to the `proxy` command; returns it.
 *
 * @example
 * addSidecarOptions(program.command('proxy').option('--listen <host:port>')).action(...)
 */
export function addSidecarOptions(command: Command): Command {
  return command
    .option('--sidecar', 'server-side sidecar: --listen for clients, forward to --app, shed by fair share with --peers')
    .option('--app <address>', 'sidecar: the app, HOST:PORT (HTTP/1.1) or http:// https:// h2c:// h2:// URL')
    .option('--peers <target>', "sidecar: this Service's endpoints, e.g. k8s:///web.shop:http")
    .option('--load-port <port>', 'sidecar: port of the load exchange between sidecars (default 9903)', port)
    .option('--pod-ip <ip>', "sidecar: this pod's IP as the Service lists it (default $POD_IP)")
    .option('--tls-cert <file>', 'sidecar: serve TLS (ALPN h2, http/1.1) with this PEM certificate')
    .option('--tls-key <file>', 'sidecar: the PEM key of --tls-cert')
    .option('--tls-client-ca <file>', 'sidecar: require client certificates signed by this CA')
    .option('--app-ca <file>', 'sidecar: verify an https:// or h2:// app with this CA')
    .option('--app-server-name <name>', 'sidecar: the name on the app’s certificate')
    .option('--app-check <tcp|PATH>', 'sidecar: readiness check of the app: tcp (default) or an HTTP path')
    .option('--app-check-interval <d>', 'sidecar: time between app checks (default 2s)', parseDuration)
    .option('--app-check-timeout <d>', 'sidecar: deadline of one app check (default 1s)', parseDuration)
    .option('--tolerance <f>', 'sidecar: shed while above the fleet mean by more than this (default 0.1)', fraction)
    .addOption(
      new Option('--load-metric <metric>', 'sidecar: load compared between pods (default requests-per-second)').choices(
        ['requests-per-second', 'in-flight', 'connections'],
      ),
    )
    .option('--metrics <host:port>', 'sidecar: /metrics, /healthz, /readyz only, for the kubelet (e.g. :9902)')
    .option('--trust-forwarded', "sidecar: keep clients' X-Forwarded-* / Forwarded (only behind your own proxy)")
    .option(
      '--load-report [max-in-flight]',
      "sidecar: report the app's load (endpoint-load-metrics on responses, probes on --load-port); N: requests in flight the app is sized for",
      positiveInt,
    )
    .option(
      '--drain-timeout <d>',
      'sidecar: how long SIGTERM waits for in-flight requests (default 20s)',
      parseDuration,
    );
}
