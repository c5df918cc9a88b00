/**
 * `evenlb doctor --service ns/name`: look at a live Service, name the cause of its imbalance
 * and prescribe cures checked on the simulator. Prints a table and a verdict, or `--json`.
 *
 * Exit codes: 0 when the check passed (or no `--fail-above` was given), 1 when max/mean is above
 * `--fail-above` or the check could not run (API server or Prometheus unreachable, RBAC
 * forbidden, a pod that cannot be scraped), 2 for usage errors (bad flags, no such Service, no
 * Kubernetes configuration, a kubeconfig without @kubernetes/client-node installed, no request
 * metric found).
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { systemClock } from '../core/clock.js';
import { ErrorCodes, isEvenlbError } from '../core/errors.js';
import { PROXY_MODES, parseDoctorOptions } from '../doctor/doctor-options.js';
import type { runDoctor } from '../doctor/run-doctor.js';
import { parseDuration } from './parse-duration.js';

/** Where the command writes; tests pass their own. */
export interface DoctorCommandIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

const processIo: DoctorCommandIo = { stdout: process.stdout, stderr: process.stderr };

function number(min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min)
      throw new InvalidArgumentError(`expected a number >= ${min}.`);
    return n;
  };
}

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > 65535) throw new InvalidArgumentError('expected a port 1..65535.');
  return n;
}

interface DoctorFlags {
  service: string;
  kubeconfig?: string;
  context?: string;
  prometheus?: string;
  query?: string;
  connectionsQuery?: string;
  podLabel?: string;
  requestsMetric?: string;
  connectionsMetric?: string;
  metricsPort?: number;
  metricsPath?: string;
  scrapeInterval?: number;
  window?: number;
  lookback?: number;
  failAbove?: number;
  balancedBelow?: number;
  proxyMode?: string;
  timeout?: number;
  seed?: number;
  json?: boolean;
}

/** Codes meaning the user asked for something that cannot be (exit 2); the rest mean the check failed (exit 1). */
const USAGE_CODES: readonly string[] = [
  ErrorCodes.INVALID_OPTION,
  ErrorCodes.INVALID_CONFIG,
  ErrorCodes.SERVICE_NOT_FOUND,
  ErrorCodes.MISSING_PACKAGE,
];

/**
 * Adds `evenlb doctor` to `program`.
 *
 * @example
 * registerDoctorCommand(program);
 * await program.parseAsync(['node', 'evenlb', 'doctor', '--service', 'prod/web', '--fail-above', '1.3']);
 */
export function registerDoctorCommand(program: Command, io: DoctorCommandIo = processIo): void {
  program
    .command('doctor')
    .description(
      "look at a live Service: measure its pods' load, name the cause of imbalance, prescribe a checked cure",
    )
    .requiredOption('--service <ns/name>', 'the Service to examine, namespace/name')
    .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG, in-cluster, ~/.kube/config)')
    .option('--context <name>', 'kubeconfig context')
    .option('--prometheus <url>', "read load from Prometheus' HTTP API instead of scraping pods through the API server")
    .option('--query <promql>', 'request rate by pod; {{namespace}} {{pods}} {{window}} {{podLabel}} are filled in')
    .option('--connections-query <promql>', 'open connections by pod (same placeholders)')
    .option('--pod-label <label>', 'label naming the pod in Prometheus results (default pod)')
    .option('--requests-metric <name>', 'request counter to read (default: the first known one found)')
    .option('--connections-metric <name>', 'open-connections gauge to read (default: the first known one found)')
    .option('--metrics-port <port>', 'pod port serving metrics (default: prometheus.io/port, else 9090)', port)
    .option('--metrics-path <path>', 'metrics path (default: prometheus.io/path, else /metrics)')
    .option('--scrape-interval <d>', 'time between the three pod scrapes (default 10s)', parseDuration)
    .option('--window <d>', 'Prometheus rate() window (default 5m)', parseDuration)
    .option('--lookback <d>', 'Prometheus: the earlier reading is this long ago (default 30m)', parseDuration)
    .option('--fail-above <ratio>', 'exit 1 when max/mean is above this (e.g. 1.3)', number(1))
    .option('--balanced-below <ratio>', 'call the Service balanced at or below this max/mean (default 1.2)', number(1))
    .addOption(
      new Option('--proxy-mode <mode>', 'kube-proxy mode (default auto: read kube-system/kube-proxy)').choices(
        PROXY_MODES,
      ),
    )
    .option('--timeout <d>', 'deadline of each request (default 10s)', parseDuration)
    .option('--seed <n>', 'simulator seed (default 1)', number(0))
    .option('--json', 'print the report as JSON')
    .action(async (flags: DoctorFlags, command: Command) => {
      const usage = (message: string): never =>
        command.error(`error: ${message}`, { exitCode: 2, code: 'evenlb.usage' });
      let options: ReturnType<typeof parseDoctorOptions>;
      try {
        options = parseDoctorOptions({
          service: flags.service,
          kubeconfig: flags.kubeconfig,
          context: flags.context,
          prometheus: flags.prometheus,
          query: flags.query,
          connectionsQuery: flags.connectionsQuery,
          podLabel: flags.podLabel,
          requestsMetric: flags.requestsMetric,
          connectionsMetric: flags.connectionsMetric,
          metricsPort: flags.metricsPort,
          metricsPath: flags.metricsPath,
          scrapeIntervalMs: flags.scrapeInterval,
          windowMs: flags.window,
          lookbackMs: flags.lookback,
          failAbove: flags.failAbove,
          balancedBelow: flags.balancedBelow,
          proxyMode: flags.proxyMode,
          timeoutMs: flags.timeout,
          seed: flags.seed,
        });
      } catch (err) {
        return usage(err instanceof Error ? err.message : String(err));
      }
      // The doctor's machinery (Kubernetes and Prometheus clients, the simulator) loads only when it runs.
      const [{ runDoctor: run }, { formatDoctorReport }] = await Promise.all([
        import('../doctor/run-doctor.js'),
        import('../doctor/format-report.js'),
      ]);
      let report: Awaited<ReturnType<typeof runDoctor>>;
      // systemClock's timers are unref()ed: hold the process open while the doctor waits between scrapes.
      const keepAlive = setInterval(() => {}, 60_000);
      try {
        report = await run(options, { clock: systemClock, nowMs: Date.now });
      } catch (err) {
        if (isEvenlbError(err) && USAGE_CODES.includes(err.code)) return usage(err.message);
        if (!isEvenlbError(err)) throw err;
        io.stderr.write(`evenlb doctor: ${err.message}\n`);
        process.exitCode = 1;
        return;
      } finally {
        clearInterval(keepAlive);
      }
      io.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatDoctorReport(report));
      if (report.failed) process.exitCode = 1;
    });
}
