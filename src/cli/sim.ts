/**
 * `evenlb sim`: run a built-in scenario or a YAML scenario file through kube-proxy's modes,
 * the apiserver's webhook clients and evenlb's balancers, and print how the load spread —
 * a table, `--json` (schema in docs/sim.md) or a self-contained `--html` page. Flags such as
 * `--pods` or `--max-age` patch the scenario before it is validated. Usage errors (unknown
 * flags, bad values, an invalid scenario) exit with code 2; a progress bar goes to stderr
 * when it is a terminal.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { builtinScenarios } from '../sim/scenario/builtin-scenarios.js';
import { parseDuration } from './parse-duration.js';

/** Where the command writes; tests pass their own. */
export interface SimCommandIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown; readonly isTTY?: boolean };
}

const processIo: SimCommandIo = { stdout: process.stdout, stderr: process.stderr };

function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`expected an integer >= ${min}.`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`expected an integer between ${min} and ${max}.`);
    return n;
  };
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number > 0.');
  return n;
}

function fraction(max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > max) {
      throw new InvalidArgumentError(`expected a number between 0 and ${max}.`);
    }
    return n;
  };
}

function durationOrZero(value: string): number {
  return /^0+(ms|s|m|h)?$/.test(value.trim()) ? 0 : parseDuration(value);
}

function intOrPercent(value: string): number | string {
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  if (/^\d+(\.\d+)?%$/.test(v)) return v;
  throw new InvalidArgumentError('expected an integer or a percentage like 25%.');
}

function list(value: string): string[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (items.length === 0) throw new InvalidArgumentError('expected a comma-separated list.');
  return items;
}

/** A comma-separated list of numbers >= 0 (`4,4,3`; integers only when `integers`). */
function numberList(integers: boolean) {
  return (value: string): number[] =>
    list(value).map((item) => {
      const n = Number(item);
      if (!Number.isFinite(n) || n < 0 || (integers && !Number.isInteger(n))) {
        throw new InvalidArgumentError(`expected a comma-separated list of ${integers ? 'integers' : 'numbers'} >= 0.`);
      }
      return n;
    });
}

/** The flags as commander hands them over. */
export interface SimFlags {
  scenario?: string;
  scenarioFile?: string;
  dataplanes?: string[];
  pods?: number;
  connections?: number;
  clients?: number;
  nodes?: number;
  trials?: number;
  seed: number;
  rate?: number;
  requests?: number;
  duration?: number;
  bucket?: number;
  workers?: number;
  serviceTime?: number;
  readyDelay?: number;
  maxAge?: number;
  ageJitter?: number;
  maxRequests?: number;
  serverMaxAge?: number;
  serverMaxRequests?: number;
  serverFairShare?: number | true;
  maxSurge?: number | string;
  maxUnavailable?: number | string;
  scaleTo?: number;
  hashKey?: 'request' | 'client';
  balancerScope?: 'client' | 'shared';
  balancers?: number;
  discoverySpread?: number;
  slowStart?: number;
  herdingGuard?: boolean;
  podZones?: number[];
  clientZones?: number[];
  zoneRouting?: 'off' | 'on';
  json?: boolean;
  jsonSeries?: boolean;
  html?: string;
  recyclingCurve?: string | true;
  list?: boolean;
  progress: boolean;
}

/**
 * Adds `evenlb sim` to `program`.
 *
 * @example
 * const program = new Command('evenlb');
 * registerSimCommand(program);
 * await program.parseAsync(['node', 'evenlb', 'sim', '--scenario', 'steady']);
 */
export function registerSimCommand(program: Command, io: SimCommandIo = processIo): void {
  const scenarioNames = builtinScenarios.map((s) => s.name);
  program
    .command('sim')
    .description("simulate how a Service's load spreads: kube-proxy modes, apiserver webhook clients, evenlb policies")
    .addOption(new Option('--scenario <name>', 'built-in scenario').choices(scenarioNames))
    .option('--scenario-file <file>', 'scenario in YAML (format in docs/sim.md)')
    .option(
      '--dataplanes <list>',
      "dataplanes to compare, comma-separated (see --list); default: the scenario's, else all",
      list,
    )
    .option('--pods <K>', 'pods at the start', integer(1, 100_000))
    .option('--connections <C>', 'long-lived connections in all', integer(1, 10_000_000))
    .option('--clients <N>', "client processes (default: one per connection, or the scenario's)", integer(1, 1_000_000))
    .option('--nodes <M>', 'nodes the clients run on (IPVS state is per node)', integer(1, 128))
    .option('--trials <N>', 'independent repetitions; figures are averaged', integer(1, 1_000_000))
    .option('--seed <S>', 'random seed; the same seed gives the same output', integer(0, 4_294_967_295), 1)
    .option('--rate <r>', 'requests per second per client (poisson/periodic arrivals)', positiveNumber)
    .option('--requests <N>', 'requests each client sends in all (finite workloads)', integer(1))
    .option('--duration <d>', 'length of the measured window (e.g. 60s)', parseDuration)
    .option('--bucket <d>', 'width of the load-over-time buckets', parseDuration)
    .option('--workers <N>', 'requests a pod serves concurrently', integer(1, 1_000_000))
    .option('--service-time <d>', 'mean service time per request (exponential)', parseDuration)
    .option('--ready-delay <d>', 'pod creation to Ready', durationOrZero)
    .option('--max-age <d>', 'client: reconnect after this connection age (LifetimePolicy, jittered)', parseDuration)
    .option('--age-jitter <f>', 'client: jitter of --max-age, 0..0.5', fraction(0.5))
    .option('--max-requests <N>', 'client: reconnect after N requests on a connection', integer(1))
    .option('--server-max-age <d>', 'server recycling: close connections at this age', parseDuration)
    .option('--server-max-requests <N>', 'server recycling: close connections after N requests', integer(1))
    .option(
      '--server-fair-share [tolerance]',
      'server: shed connections only above the fleet mean × (1 + tolerance), default 0.1',
      fraction(10),
    )
    .option('--max-surge <n>', 'rolling update maxSurge (integer or percentage)', intOrPercent)
    .option('--max-unavailable <n>', 'rolling update maxUnavailable (integer or percentage)', intOrPercent)
    .option('--scale-to <K>', 'pods after the scale event', integer(1, 100_000))
    .addOption(new Option('--hash-key <key>', 'hash policies key requests by').choices(['request', 'client']))
    .addOption(
      new Option('--balancer-scope <scope>', 'evenlb balancer per client or shared').choices(['client', 'shared']),
    )
    .option(
      '--balancers <M>',
      'evenlb: M balancer replicas, each its own Balancer and load view',
      integer(1, 1_000_000),
    )
    .option(
      '--discovery-spread <d>',
      'evenlb: each replica learns of an endpoint change after a delay uniform in [0, d] (0: at once)',
      durationOrZero,
    )
    .option('--json', 'print the result as JSON (schema in docs/sim.md): figures, per-pod shares, no time series')
    .option('--json-series', "print JSON with every pod's load over time (large: pods × buckets × dataplanes)")
    .option('--slow-start <d>', 'evenlb: slow-start window for newly ready pods (e.g. 20s)', durationOrZero)
    .option('--no-herding-guard', "evenlb: switch off least-request/peak-ewma's herding guard")
    .option('--pod-zones <list>', 'pods per zone at the start, summing to the pod count, e.g. 4,4,3', numberList(true))
    .option('--client-zones <list>', 'relative clients per zone, one per pod zone, e.g. 50,30,20', numberList(false))
    .addOption(new Option('--zone-routing <mode>', 'evenlb: load-aware zone routing').choices(['off', 'on']))
    .option('--html <file>', 'also write a self-contained HTML report with charts')
    .option(
      '--recycling-curve [dataplane]',
      'with --html: add the balance-vs-reconnects curve of server-side recycling (ages 60s…1s, fair-share tolerances 0.05…0.3) through a per-connection dataplane (default iptables); runs the scenario 12 more times',
    )
    .option('--list', 'list scenarios and dataplanes')
    .option('--no-progress', 'no progress bar on stderr')
    .action(async (flags: SimFlags, command: Command) => {
      const { runSimCommand } = await import('./sim-run.js');
      runSimCommand(flags, command, io);
    });
}
