/**
 * `evenlb proxy --sidecar`: the flags of the server-side sidecar and what they become — a
 * `ProxyConfig` (through `sidecar-config.ts`, the same options as the short YAML form read with
 * `--sidecar --config FILE`), the app's readiness check wired into `/readyz`, and the loader a
 * reload uses. Flag combinations that cannot work are usage errors naming the flag (exit 2):
 * a sidecar flag without `--sidecar`, `--sidecar` with `--upstream`/`--policy`/`--protocol`,
 * a missing `--listen`, `--app` or `--peers`, half a certificate pair.
 */
import type { Command } from 'commander';
import { systemClock } from '../core/clock.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import type { ProxyConfig } from '../proxy/config/config-schema.js';
import type { ProxyOptions } from '../proxy/proxy-server.js';
import type { AppHealth } from '../proxy/sidecar/app-health.js';
import {
  loadSidecarConfigFile,
  parseAppAddress,
  parseSidecarOptions,
  type SidecarOptions,
  type SidecarSetup,
  sidecarSetup,
} from '../proxy/sidecar/sidecar-config.js';
import { startSidecarRuntime } from '../proxy/sidecar/sidecar-runtime.js';
import type { SidecarFlags } from './proxy-sidecar-flags.js';

/** Flags only the sidecar takes, and the option each sets (for messages naming the flag). */
const SIDECAR_ONLY: Readonly<Record<string, { flag: string; field: string }>> = {
  app: { flag: '--app', field: 'app' },
  peers: { flag: '--peers', field: 'peers' },
  loadPort: { flag: '--load-port', field: 'loadPort' },
  podIp: { flag: '--pod-ip', field: 'self' },
  tlsCert: { flag: '--tls-cert', field: 'tls.cert' },
  tlsKey: { flag: '--tls-key', field: 'tls.key' },
  tlsClientCa: { flag: '--tls-client-ca', field: 'tls.clientCa' },
  appCa: { flag: '--app-ca', field: 'appTls.ca' },
  appServerName: { flag: '--app-server-name', field: 'appTls.servername' },
  appCheck: { flag: '--app-check', field: 'appCheck.path' },
  appCheckInterval: { flag: '--app-check-interval', field: 'appCheck.intervalMs' },
  appCheckTimeout: { flag: '--app-check-timeout', field: 'appCheck.timeoutMs' },
  tolerance: { flag: '--tolerance', field: 'fairShare.tolerance' },
  loadMetric: { flag: '--load-metric', field: 'fairShare.loadMetric' },
  metrics: { flag: '--metrics', field: 'metrics' },
  trustForwarded: { flag: '--trust-forwarded', field: 'trustForwardedHeaders' },
  drainTimeout: { flag: '--drain-timeout', field: 'drainTimeoutMs' },
  loadReport: { flag: '--load-report', field: 'loadReport.maxInFlight' },
};

/** Proxy flags that mean nothing to a sidecar (it forwards to `--app`, one endpoint). */
const NOT_WITH_SIDECAR: readonly (readonly [keyof SidecarFlags, string])[] = [
  ['upstream', '--upstream'],
  ['policy', '--policy'],
  ['protocol', '--protocol'],
];

function usage(message: string, flag: string): EvenlbError {
  return new EvenlbError(ErrorCodes.INVALID_OPTION, message, { details: { field: flag } });
}

/** Fields of the built proxy configuration, by the flag that sets them (its checks of files and ports). */
const CONFIG_FIELD_FLAGS: Readonly<Record<string, string>> = {
  'listeners[0].address': '--listen',
  'listeners[0].tls.cert': '--tls-cert',
  'listeners[0].tls.key': '--tls-key',
  'listeners[0].tls.clientCa': '--tls-client-ca',
  'listeners[0].recycle.fairShare.loadPort': '--load-port',
  'clusters[0].tls.ca': '--app-ca',
  'admin.address': '--admin',
  'admin.metricsAddress': '--metrics',
};

/** The flag that sets `field` (a sidecar option or a field of the built configuration), if one does. */
function flagOf(field: string): string | undefined {
  for (const { flag, field: f } of Object.values(SIDECAR_ONLY)) if (f === field) return flag;
  if (field === 'listen') return '--listen';
  if (field === 'admin') return '--admin';
  return CONFIG_FIELD_FLAGS[field];
}

/** An option or configuration error reworded to name the flag: `--app-check-timeout: must be ...`. */
function asFlagError(err: EvenlbError): EvenlbError {
  const field = (err.details as { field?: unknown } | undefined)?.field;
  if (typeof field !== 'string' || field.startsWith('--')) return err;
  const flag = flagOf(field);
  if (flag === undefined) return err;
  const m = /(must .*|is .*)$/.exec(err.message.replace(/^[^"]*"[^"]*"\s*/, ''));
  return usage(`${flag}: ${m?.[1] ?? err.message}`, flag);
}

/** What `evenlb proxy` needs to run a sidecar. */
export interface SidecarCli {
  readonly config: ProxyConfig;
  /** The proxy's logger and the readiness of the app (already checking). */
  readonly proxyOptions: ProxyOptions;
  /** Reads the configuration again on reload (the sidecar YAML form with `--config`). */
  readonly load: (file: string) => ProxyConfig;
  readonly appHealth: AppHealth;
}

/**
 * The sidecar options the flags of `evenlb proxy --sidecar` (without `--config`) say; a usage
 * error names the flag. Files named by flags are not read here (`sidecarSetup` reads them).
 *
 * @example
 * sidecarOptionsFromFlags({ sidecar: true, listen: ':8080', app: '127.0.0.1:8081', peers: 'k8s:///web.shop:http' }).loadPort; // 9903
 */
export function sidecarOptionsFromFlags(f: SidecarFlags): SidecarOptions {
  try {
    return optionsFromFlags(f);
  } catch (err) {
    throw err instanceof EvenlbError ? asFlagError(err) : err;
  }
}

function optionsFromFlags(f: SidecarFlags): SidecarOptions {
  if (f.app === undefined)
    throw usage('--sidecar needs --app HOST:PORT (the app in this pod, e.g. 127.0.0.1:8081)', '--app');
  if (f.peers === undefined)
    throw usage("--sidecar needs --peers TARGET (this Service's endpoints, e.g. k8s:///web.shop:http)", '--peers');
  if ((f.tlsCert === undefined) !== (f.tlsKey === undefined)) {
    const [given, missing] = f.tlsCert === undefined ? ['--tls-key', '--tls-cert'] : ['--tls-cert', '--tls-key'];
    throw usage(`${given} needs ${missing} (a certificate and its key)`, missing);
  }
  const appTlsFlag =
    f.appCa !== undefined ? '--app-ca' : f.appServerName !== undefined ? '--app-server-name' : undefined;
  if (appTlsFlag !== undefined && parseAppAddress(f.app)?.tls === false)
    throw usage(`${appTlsFlag} needs an app serving TLS (--app https://HOST:PORT or h2://HOST:PORT)`, appTlsFlag);
  if (f.tlsClientCa !== undefined && f.tlsCert === undefined)
    throw usage('--tls-client-ca needs --tls-cert and --tls-key', '--tls-client-ca');
  const check = f.appCheck;
  const appCheck = {
    ...(check === undefined ? {} : check === 'tcp' ? { kind: 'tcp' } : { kind: 'http', path: check }),
    ...(f.appCheckInterval === undefined ? {} : { intervalMs: f.appCheckInterval }),
    ...(f.appCheckTimeout === undefined ? {} : { timeoutMs: f.appCheckTimeout }),
  };
  const options = parseSidecarOptions({
    listen: f.listen,
    app: f.app,
    peers: f.peers,
    ...(f.loadPort === undefined ? {} : { loadPort: f.loadPort }),
    ...(f.podIp === undefined ? {} : { self: f.podIp }),
    ...(f.tlsCert === undefined
      ? {}
      : {
          tls: { cert: f.tlsCert, key: f.tlsKey, ...(f.tlsClientCa === undefined ? {} : { clientCa: f.tlsClientCa }) },
        }),
    ...(f.appCa === undefined && f.appServerName === undefined
      ? {}
      : {
          appTls: {
            ...(f.appCa === undefined ? {} : { ca: f.appCa }),
            ...(f.appServerName === undefined ? {} : { servername: f.appServerName }),
          },
        }),
    appCheck,
    fairShare: {
      ...(f.tolerance === undefined ? {} : { tolerance: f.tolerance }),
      ...(f.loadMetric === undefined ? {} : { loadMetric: f.loadMetric }),
    },
    ...(f.admin === undefined ? {} : { admin: f.admin }),
    ...(f.metrics === undefined ? {} : { metrics: f.metrics }),
    ...(f.trustForwarded === undefined ? {} : { trustForwardedHeaders: true }),
    ...(f.drainTimeout === undefined ? {} : { drainTimeoutMs: Math.round(f.drainTimeout) }),
    ...(f.accessLog === undefined ? {} : { accessLog: true }),
    ...(f.loadReport === undefined
      ? {}
      : { loadReport: typeof f.loadReport === 'number' ? { maxInFlight: f.loadReport } : {} }),
  });
  if (options.appCheck.timeoutMs > options.appCheck.intervalMs)
    throw usage(
      `--app-check-timeout (${options.appCheck.timeoutMs} ms) must not be longer than --app-check-interval (${options.appCheck.intervalMs} ms)`,
      '--app-check-timeout',
    );
  return options;
}

/**
 * The sidecar for these flags, or undefined when `--sidecar` is not given (and no sidecar flag
 * is). Throws an `EvenlbError` naming the flag for a usage error. On success the app check is
 * already running (its timers never keep the process alive).
 *
 * @example
 * const sidecar = sidecarFromCli(opts, command); // evenlb proxy --sidecar --listen :8080 --app 127.0.0.1:8081 --peers k8s:///web.shop:80
 * const proxy = await ProxyServer.start(sidecar.config, sidecar.proxyOptions);
 */
export function sidecarFromCli(flags: SidecarFlags, command: Command): SidecarCli | undefined {
  const given = Object.entries(SIDECAR_ONLY).filter(([k]) => flags[k as keyof SidecarFlags] !== undefined);
  if (flags.sidecar !== true) {
    const first = given[0];
    if (first === undefined) return undefined;
    throw usage(`${first[1].flag} is a sidecar flag: add --sidecar`, first[1].flag);
  }
  for (const [key, flag] of NOT_WITH_SIDECAR) {
    if (flags[key] !== undefined)
      throw usage(`${flag} cannot be combined with --sidecar (the sidecar forwards to --app)`, flag);
  }
  let setup: SidecarSetup;
  let load: (file: string) => ProxyConfig;
  try {
    if (flags.config !== undefined) {
      const first = given[0];
      if (first !== undefined)
        throw usage(
          `${first[1].flag} cannot be combined with --sidecar --config (set sidecar.${first[1].field} in the file)`,
          first[1].flag,
        );
      setup = loadSidecarConfigFile(flags.config);
      load = (file) => loadSidecarConfigFile(file).config;
    } else {
      if (command.getOptionValueSource('listen') !== 'cli')
        throw usage('--sidecar needs --listen HOST:PORT or :PORT (the Service’s targetPort)', '--listen');
      setup = sidecarSetup(sidecarOptionsFromFlags(flags));
      load = () => {
        throw usage('a sidecar started from flags has no file to reload', '--config');
      };
    }
  } catch (err) {
    if (err instanceof EvenlbError && flags.config === undefined) throw asFlagError(err);
    throw err;
  }
  const { proxyOptions, appHealth } = startSidecarRuntime(setup, systemClock);
  return { config: setup.config, proxyOptions, load, appHealth };
}
