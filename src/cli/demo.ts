/**
 * `evenlb demo`: the whole story in one command on loopback — pods as child processes, long-lived
 * clients, a scale-out and a rolling restart per phase, balanced five ways (pinned, evenlb
 * client, evenlb proxy, connection recycler, fair-share sidecar in front of plain servers).
 * Prints a live line, the tables, and writes a self-contained HTML report. Usage errors exit 2; Ctrl-C stops everything and exits 130.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { isEvenlbError } from '../core/errors.js';
import { parseDemoOptions } from '../demo/demo-options.js';
import { DEFAULT_PHASE_IDS, PHASE_IDS } from '../demo/phases.js';

function integer(name: string) {
  return (value: string): number => {
    if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number; received "${value}"`);
    return Number(value);
  };
}

function positiveNumber(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0) {
      throw new InvalidArgumentError(`${name} must be a number > 0; received "${value}"`);
    }
    return n;
  };
}

/** `12`, `12s`, `1.5m` or `800ms` → milliseconds. */
export function parseDurationMs(value: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m)?$/.exec(value.trim());
  if (m === null) throw new InvalidArgumentError(`expected a duration such as 12s, 800ms or 1m; received "${value}"`);
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  return Math.round(unit === 'ms' ? n : unit === 'm' ? n * 60_000 : n * 1000);
}

function phaseList(value: string): string[] {
  const list = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  for (const p of list) {
    if (!(PHASE_IDS as readonly string[]).includes(p)) {
      throw new InvalidArgumentError(`unknown phase "${p}"; phases are ${PHASE_IDS.join(', ')}`);
    }
  }
  if (list.length === 0) throw new InvalidArgumentError(`expected a comma-separated list of ${PHASE_IDS.join(', ')}`);
  return list;
}

interface DemoFlags {
  pods: number;
  clients: number;
  duration: number;
  rate: number;
  seed: number;
  output: string;
  json?: string;
  phases: string[];
  dataplane: string;
  progress: string;
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description(
      'run pods and long-lived clients on loopback and show uneven load (pinned connections) and its cures ' +
        '(evenlb client, proxy, recycler, sidecar), with a scale-out and a rolling restart per phase',
    )
    .option('--pods <n>', 'pods before the scale-out', integer('--pods'), 4)
    .option('--clients <n>', 'long-lived clients', integer('--clients'), 20)
    .option('--duration <time>', 'length of each phase (12s, 800ms, 1m)', parseDurationMs, 11_000)
    .option('--rate <rps>', 'requests per second per client', positiveNumber('--rate'), 80)
    .option('--seed <n>', 'seed for the clients and balancers', integer('--seed'), 1)
    .option('--output <file>', 'HTML report path', 'demo-report.html')
    .option('--json <file>', 'write machine-readable results to this file')
    .option('--phases <list>', `phases to run, comma-separated (${PHASE_IDS.join(',')})`, phaseList, [
      ...DEFAULT_PHASE_IDS,
    ])
    .option(
      '--dataplane <name>',
      'loopback, or netfilter (Linux, root: pinned, recycler and sidecar phases through kube-proxy iptables rules in a netns)',
      'loopback',
    )
    .option('--progress <style>', 'live line: auto, tty, plain or none', 'auto')
    .action(async (flags: DemoFlags, command: Command) => {
      let options: ReturnType<typeof parseDemoOptions>;
      try {
        options = parseDemoOptions({
          pods: flags.pods,
          clients: flags.clients,
          durationMs: flags.duration,
          ratePerClient: flags.rate,
          seed: flags.seed,
          output: flags.output,
          ...(flags.json === undefined ? {} : { json: flags.json }),
          phases: flags.phases,
          dataplane: flags.dataplane,
          progress: flags.progress,
        });
      } catch (err) {
        if (isEvenlbError(err)) command.error(`error: ${err.message}`, { exitCode: 2, code: 'evenlb.usage' });
        throw err;
      }
      // Fail before starting anything rather than after a minute of work.
      for (const [flag, file] of [
        ['--output', options.output],
        ['--json', options.json],
      ] as const) {
        if (file === undefined) continue;
        const dir = dirname(resolve(file));
        if (!existsSync(dir)) {
          command.error(`error: ${flag} ${file}: directory ${dir} does not exist`, {
            exitCode: 2,
            code: 'evenlb.usage',
          });
        }
      }
      // The demo's machinery (pods, clients, proxy, netfilter) loads only when a demo runs.
      const [{ runDemo }, { netfilterApi }] = await Promise.all([
        import('../demo/run-demo.js'),
        import('../demo/netfilter-dataplane.js'),
      ]);
      const outcome = await runDemo(options, {
        stdout: process.stdout,
        stderr: process.stderr,
        netfilter: netfilterApi,
      });
      process.exitCode = outcome.exitCode;
    });
}
