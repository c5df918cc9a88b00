/**
 * `evenlb sim`: run a built-in scenario or a YAML scenario file through kube-proxy's modes,
 * the apiserver's webhook clients and evenlb's balancers, and print how the load spread —
 * a table, `--json` (schema in docs/sim.md) or a self-contained `--html` page. Flags such as
 * `--pods` or `--max-age` patch the scenario before it is validated. Usage errors (unknown
 * flags, bad values, an invalid scenario) exit with code 2; a progress bar goes to stderr
 * when it is a terminal.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { isEvenlbError } from '../core/errors.js';
import {
  applyKnobs,
  builtinScenarios,
  findBuiltinScenario,
  listDataplanes,
  parseBuiltinScenario,
  parseScenario,
  resolveDataplanes,
  runScenario,
  type ScenarioKnobs,
  type SimReport,
} from '../sim/index.js';
import { formatTable } from '../sim/report/format-table.js';
import { recyclingCurve } from '../sim/report/recycling-curve.js';
import { type HtmlExtras, renderHtml } from '../sim/report/render-html.js';
import { formatReportJson } from '../sim/report/report-json.js';
import { expandDataplanes } from './expand-dataplanes.js';
import { progressBar } from './sim-progress.js';

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

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `250ms`, `30s`, `2m`, `1h`, or a bare number of milliseconds. */
export function parseDuration(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (m === null) throw new InvalidArgumentError('expected a duration like 500ms, 30s, 2m or 1h.');
  const ms = Number(m[1]) * (UNITS[m[2] ?? 'ms'] as number);
  if (ms <= 0) throw new InvalidArgumentError('expected a duration > 0.');
  return ms;
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

interface SimFlags {
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

function knobsFrom(f: SimFlags): ScenarioKnobs {
  const k: { -readonly [K in keyof ScenarioKnobs]: ScenarioKnobs[K] } = {};
  if (f.pods !== undefined) k.pods = f.pods;
  if (f.connections !== undefined) k.connections = f.connections;
  if (f.clients !== undefined) k.clients = f.clients;
  if (f.nodes !== undefined) k.nodes = f.nodes;
  if (f.trials !== undefined) k.trials = f.trials;
  if (f.rate !== undefined) k.ratePerSecond = f.rate;
  if (f.requests !== undefined) k.requestsPerClient = f.requests;
  if (f.duration !== undefined) k.windowMs = f.duration;
  if (f.bucket !== undefined) k.bucketMs = f.bucket;
  if (f.workers !== undefined) k.workers = f.workers;
  if (f.serviceTime !== undefined) k.serviceTimeMs = f.serviceTime;
  if (f.readyDelay !== undefined) k.readyDelayMs = f.readyDelay;
  if (f.maxAge !== undefined) k.maxConnectionAgeMs = f.maxAge;
  if (f.ageJitter !== undefined) k.ageJitter = f.ageJitter;
  if (f.maxRequests !== undefined) k.maxRequestsPerConnection = f.maxRequests;
  if (f.serverMaxAge !== undefined) k.serverMaxConnectionAgeMs = f.serverMaxAge;
  if (f.serverMaxRequests !== undefined) k.serverMaxRequestsPerConnection = f.serverMaxRequests;
  if (f.serverFairShare !== undefined)
    k.serverFairShareTolerance = f.serverFairShare === true ? 0.1 : f.serverFairShare;
  if (f.maxSurge !== undefined) k.maxSurge = f.maxSurge;
  if (f.maxUnavailable !== undefined) k.maxUnavailable = f.maxUnavailable;
  if (f.scaleTo !== undefined) k.scaleTo = f.scaleTo;
  if (f.hashKey !== undefined) k.hashKey = f.hashKey;
  if (f.balancerScope !== undefined) k.balancerScope = f.balancerScope;
  if (f.balancers !== undefined) k.balancers = f.balancers;
  if (f.discoverySpread !== undefined) k.discoverySpreadMs = f.discoverySpread;
  if (f.slowStart !== undefined) k.slowStartMs = f.slowStart;
  if (f.herdingGuard === false) k.herdingGuard = false;
  if (f.podZones !== undefined) k.podZones = f.podZones;
  if (f.clientZones !== undefined) k.clientZones = f.clientZones;
  if (f.zoneRouting !== undefined) k.zoneRouting = f.zoneRouting;
  return k;
}

function loadScenarioFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read scenario file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return parseYaml(text);
  } catch (err) {
    if (err instanceof YAMLParseError) throw new Error(`scenario file ${file} is not valid YAML: ${err.message}`);
    throw err;
  }
}

function listing(): string {
  const lines = ['Scenarios (--scenario):'];
  const width = Math.max(...builtinScenarios.map((s) => s.name.length));
  for (const s of builtinScenarios) lines.push(`  ${s.name.padEnd(width)}  ${s.summary}`);
  lines.push('', 'Dataplanes (--dataplanes, comma-separated; "evenlb:*" means every evenlb policy):');
  const dps = listDataplanes();
  const w2 = Math.max(...dps.map((d) => d.name.length));
  for (const d of dps) lines.push(`  ${d.name.padEnd(w2)}  ${d.description}`);
  return `${lines.join('\n')}\n`;
}

/**
 * The report without per-pod time series: `--json`'s default, a summary whose size grows with
 * pods × dataplanes only (the series grow with pods × buckets × dataplanes: 84 MB at 1,000 pods).
 */
function withoutSeries(report: SimReport): SimReport {
  return { ...report, results: report.results.map((r) => ({ ...r, series: null })) };
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
    .action((flags: SimFlags, command: Command) => {
      if (flags.list) {
        io.stdout.write(listing());
        return;
      }
      const usage = (message: string): never =>
        command.error(`error: ${message}`, { exitCode: 2, code: 'evenlb.usage' });
      if ((flags.scenario === undefined) === (flags.scenarioFile === undefined)) {
        usage(`choose one of --scenario <name> (${scenarioNames.join(', ')}) or --scenario-file <file>`);
      }
      if (flags.recyclingCurve !== undefined && flags.html === undefined) {
        usage('--recycling-curve draws into the HTML report: give --html <file> too');
      }
      let scenario: ReturnType<typeof parseScenario>;
      let dataplanes: ReturnType<typeof resolveDataplanes>;
      const builtin = flags.scenario === undefined ? undefined : findBuiltinScenario(flags.scenario);
      const buildScenario = (knobs: ScenarioKnobs): ReturnType<typeof parseScenario> =>
        builtin !== undefined
          ? parseBuiltinScenario(builtin, knobs, JSON.stringify(builtin.name))
          : parseScenario(
              applyKnobs(loadScenarioFile(flags.scenarioFile as string), knobs),
              flags.scenarioFile as string,
            );
      try {
        scenario = buildScenario(knobsFrom(flags));
        const names = flags.dataplanes ?? scenario.dataplanes ?? listDataplanes().map((d) => d.name);
        dataplanes = resolveDataplanes(expandDataplanes(names));
      } catch (err) {
        return usage(err instanceof Error ? err.message : String(err));
      }
      const progress = progressBar(io.stderr, flags.progress);
      let report: ReturnType<typeof runScenario>;
      try {
        report = runScenario({
          scenario,
          dataplanes,
          seed: flags.seed,
          onProgress: (f, status) => progress.update(f, status),
        });
      } catch (err) {
        progress.done();
        // A scenario that validates but cannot run (e.g. never settles) is still the user's input.
        if (isEvenlbError(err)) return usage(err.message);
        throw err;
      }
      progress.done();
      if (flags.json === true || flags.jsonSeries === true) {
        io.stdout.write(formatReportJson(flags.jsonSeries === true ? report : withoutSeries(report)));
      } else {
        io.stdout.write(formatTable(report));
      }
      if (flags.html !== undefined) {
        let extras: HtmlExtras = {};
        if (flags.recyclingCurve !== undefined) {
          const dataplane = flags.recyclingCurve === true ? 'iptables' : flags.recyclingCurve;
          const { serverMaxConnectionAgeMs: _age, serverFairShareTolerance: _fair, ...base } = knobsFrom(flags);
          try {
            const curveDataplanes = resolveDataplanes([dataplane]);
            extras = {
              recyclingCurve: recyclingCurve(
                (knobs) =>
                  runScenario({
                    scenario: buildScenario({ ...base, ...knobs }),
                    dataplanes: curveDataplanes,
                    seed: flags.seed,
                  }),
                dataplane,
              ),
            };
          } catch (err) {
            return usage(err instanceof Error ? err.message : String(err));
          }
        }
        writeFileSync(flags.html, renderHtml(report, extras));
        io.stderr.write(`wrote ${flags.html}\n`);
      }
    });
}
