/**
 * What `import('evenlb')` costs, by the files it opens: in a fresh Node process, over a fresh
 * build installed as an application sees it (test/support/isolated-install.ts), traced with
 * `strace -f -e trace=openat`. The root must open no file of the packages only the CLI and the
 * proxy need — yaml, pino, chart.js, commander — nor ajv (the proxy's configuration validator is
 * generated from its schema at build time; ajv is not installed with the package), nor
 * @kubernetes/client-node (an optional peer, present here so that a load of it would show), nor
 * prom-client before metrics are asked for. The same trace over `evenlb/proxy` checks the
 * method: that entry does load yaml and pino. `evenlb/server` and `evenlb/grpc`
 * are held to the same rule. The CLI declares its subcommands on commander alone: `evenlb --help`
 * and a usage error open no other package (each subcommand loads what it runs on in its action),
 * while a command that runs — `evenlb sim --list` — loads the simulator's files and still none of
 * the proxy's packages (ajv, pino, prom-client, undici, @kubernetes/client-node).
 *
 * strace is a real dependency of this test: where it is missing the test is skipped, and with
 * EVENLB_REQUIRE_STRACE=1 (set by .ci/run, which installs it) that is a failure.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type IsolatedInstall, isolatedInstall, runtimeDependencies } from '../support/isolated-install.js';

const FORBIDDEN = ['ajv', 'yaml', 'pino', 'chart.js', 'commander', '@kubernetes/client-node'];

const hasStrace = spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
if (!hasStrace && process.env.EVENLB_REQUIRE_STRACE === '1') {
  throw new Error('EVENLB_REQUIRE_STRACE=1 but strace is not installed (apt-get install strace)');
}

let install: IsolatedInstall;

beforeAll(async () => {
  if (!hasStrace) return;
  install = await isolatedInstall({
    packages: [...runtimeDependencies(), '@kubernetes/client-node'],
    withPackage: true,
  });
}, 120_000);

afterAll(async () => {
  await install?.remove();
});

/** The packages (by node_modules folder) whose files `specifier`'s import opens. */
function packagesOpenedBy(specifier: string): Set<string> {
  return packagesOpenedByRun(['-e', `await import(${JSON.stringify(specifier)})`], [0]);
}

/** The packages whose files `node ...args` opens; its exit code must be one of `codes`. */
function packagesOpenedByRun(args: readonly string[], codes: readonly number[]): Set<string> {
  const trace = join(install.dir, `trace-${args.join('-').replace(/\W/g, '-').slice(0, 80)}.txt`);
  const r = spawnSync('strace', ['-f', '-e', 'trace=openat,open', '-o', trace, process.execPath, ...args], {
    cwd: install.dir,
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (!codes.includes(r.status ?? -1)) throw new Error(`strace node ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  const opened = new Set<string>();
  for (const [, path] of readFileSync(trace, 'utf8').matchAll(/"([^"]*\/node_modules\/[^"]*)"/g)) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path!.slice(path!.lastIndexOf('/node_modules/')));
    if (m !== null) opened.add(m[1]!);
  }
  return opened;
}

describe.skipIf(!hasStrace)('files opened by a fresh import', () => {
  test('import("evenlb") opens undici and evenlb, no file of ajv, yaml, pino, chart.js, commander or @kubernetes/client-node, nor prom-client', () => {
    const opened = packagesOpenedBy('evenlb');
    expect(opened.has('undici'), 'undici is loaded (the trace works)').toBe(true);
    expect([...FORBIDDEN, 'prom-client'].filter((p) => opened.has(p))).toEqual([]);
  });

  test.each(['evenlb/server', 'evenlb/grpc'])('import("%s") opens none of them either', (specifier) => {
    const opened = packagesOpenedBy(specifier);
    expect([...FORBIDDEN, 'prom-client'].filter((p) => opened.has(p))).toEqual([]);
  });

  test('import("evenlb/proxy") does open the proxy’s yaml and pino (so their absence above means something)', () => {
    const opened = packagesOpenedBy('evenlb/proxy');
    expect(['yaml', 'pino'].filter((p) => opened.has(p))).toEqual(['yaml', 'pino']);
    // The configuration's validator is generated code: ajv is not installed with the package.
    expect(opened.has('ajv')).toBe(false);
  });
});

describe.skipIf(!hasStrace)('files opened by the CLI', () => {
  const cli = (): string => join(install.dir, 'node_modules', 'evenlb', 'dist', 'cli', 'main.js');
  const proxyPackages = ['ajv', 'pino', 'prom-client', 'undici', '@kubernetes/client-node'];

  test.each([
    ['--help', 0],
    ['sim --no-such-flag', 2],
    ['proxy --no-such-flag', 2],
    ['doctor --no-such-flag', 2],
    ['demo --phases nope', 2],
  ] as const)('evenlb %s opens commander and no other package', (argv, code) => {
    const opened = packagesOpenedByRun([cli(), ...argv.split(' ')], [code]);
    expect([...opened].filter((p) => p !== 'evenlb')).toEqual(['commander']);
  });

  test('evenlb sim --list runs the simulator and opens none of the proxy’s packages', () => {
    const opened = packagesOpenedByRun([cli(), 'sim', '--list'], [0]);
    expect(proxyPackages.filter((p) => opened.has(p))).toEqual([]);
  });
});
