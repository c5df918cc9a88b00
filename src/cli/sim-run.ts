/**
 * What `evenlb sim` does once its flags are parsed: build the scenario (built-in or a YAML file,
 * patched by the flags), run it through the dataplanes and print the table, `--json` or the
 * `--html` page. Loaded by the command's action only, so that declaring the command loads neither
 * the simulator's engine nor its reports.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
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
import type { SimCommandIo, SimFlags } from './sim.js';
import { progressBar } from './sim-progress.js';

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
 * Runs `evenlb sim` with its parsed flags, writing to `io`; usage errors go through
 * `command.error` (exit 2).
 *
 * @example
 * runSimCommand(flags, command, { stdout: process.stdout, stderr: process.stderr });
 */
export function runSimCommand(flags: SimFlags, command: Command, io: SimCommandIo): undefined {
  const scenarioNames = builtinScenarios.map((s) => s.name);
  if (flags.list) {
    io.stdout.write(listing());
    return undefined;
  }
  const usage = (message: string): never => command.error(`error: ${message}`, { exitCode: 2, code: 'evenlb.usage' });
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
      : parseScenario(applyKnobs(loadScenarioFile(flags.scenarioFile as string), knobs), flags.scenarioFile as string);
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
}
