/**
 * What README.md and docs/ say about the CLI is checked against the code it describes, so the
 * two cannot drift apart again:
 *
 * - the simulator's scenarios: README's "Scenarios:" list and docs/sim.md's built-in scenario
 *   table name exactly the built-in scenarios (`builtinScenarios`);
 * - the flags: each subcommand's flags (from the commander definitions in src/cli/program.ts)
 *   are all described in docs/<command>.md, and every flag the docs give a command exists —
 *   on `evenlb <command> ...` lines (and their continuation lines in a code block), in the
 *   flag tables of docs/<command>.md, and in inline `--flag` code of README's section about
 *   that command; where a flag table has a default column, plain numbers match the defaults.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, test } from 'vitest';
import { createProgram } from '../../src/cli/program.js';
import { builtinScenarios } from '../../src/sim/scenario/builtin-scenarios.js';
import { repoRoot } from '../support/run-cli.js';

const COMMANDS = ['demo', 'doctor', 'proxy', 'sim'] as const;
type CommandName = (typeof COMMANDS)[number];

const read = (path: string): string => readFileSync(join(repoRoot, path), 'utf8');
const README = read('README.md');
const DOCS = ['api', 'demo', 'doctor', 'grpc', 'proxy', 'recycler', 'security', 'sim', 'slow-start-and-zones'];
const docFiles = (): { path: string; text: string }[] => [
  { path: 'README.md', text: README },
  ...DOCS.map((name) => ({ path: `docs/${name}.md`, text: read(`docs/${name}.md`) })),
];

const program = createProgram();
const commandOf = (name: CommandName): Command => program.commands.find((c) => c.name() === name)!;
/** `--flag` → the option, for one command (with the global --help). */
function flagsOf(name: CommandName): Map<string, { readonly defaultValue?: unknown }> {
  const flags = new Map<string, { readonly defaultValue?: unknown }>([['--help', {}]]);
  for (const o of commandOf(name).options) {
    if (o.long !== undefined) flags.set(o.long, o);
    if (o.short !== undefined) flags.set(o.short, o);
  }
  return flags;
}

const FLAG = /(?<![\w-])--?[a-z][a-z0-9-]*/g;
const flagsIn = (text: string): string[] => (text.match(FLAG) ?? []).filter((f) => f.startsWith('--'));

/** Flags written after `evenlb <command>` (or `npm run demo --`), with code-block continuation lines. */
function commandLineFlags(text: string): { command: CommandName; flag: string; line: string }[] {
  const out: { command: CommandName; flag: string; line: string }[] = [];
  const lines = text.split('\n');
  let current: CommandName | undefined;
  for (const line of lines) {
    const m = /(?:evenlb|npm run) (demo|doctor|proxy|sim)\b( --)?(.*)$/.exec(line);
    if (m !== null) {
      current = m[1] as CommandName;
      for (const flag of flagsIn(m[3]!.split('`')[0]!)) out.push({ command: current, flag, line });
    } else if (current !== undefined && /^\s+(\[|--)/.test(line)) {
      for (const flag of flagsIn(line)) out.push({ command: current, flag, line });
    } else {
      current = undefined;
    }
    if (current !== undefined && !/\\\s*$|^\s*(evenlb|npm run|\s+\[|\s+--)/.test(line)) current = undefined;
  }
  return out;
}

/** The rows of markdown tables whose first cell starts with a flag: [first cell, second cell]. */
function flagRows(text: string): [string, string][] {
  return text
    .split('\n')
    .filter((l) => /^\| `--/.test(l))
    .map((l) => l.split('|').map((c) => c.trim()))
    .map((cells) => [cells[1]!, cells[2] ?? '']);
}

/** README's section about `evenlb <command>`: from its heading to the next `## ` heading. */
function readmeSection(command: CommandName): string {
  const start = README.split('\n').findIndex((l) => /^## /.test(l) && l.includes(`evenlb ${command}`));
  if (start < 0) throw new Error(`README.md has no section about evenlb ${command}`);
  const rest = README.split('\n').slice(start + 1);
  const end = rest.findIndex((l) => /^## /.test(l));
  return rest.slice(0, end < 0 ? undefined : end).join('\n');
}

describe('the simulator scenarios in the docs', () => {
  const names = builtinScenarios.map((s) => s.name).sort();

  test("README's Scenarios: list names exactly the built-in scenarios", () => {
    const m = /Scenarios: ([\s\S]*?)or your own YAML/.exec(README);
    expect(m, 'README.md has a "Scenarios: ... or your own YAML" sentence').not.toBeNull();
    expect([...m![1]!.matchAll(/`([a-z-]+)`/g)].map((x) => x[1]).sort()).toEqual(names);
  });

  test("docs/sim.md's built-in scenario table names exactly the built-in scenarios", () => {
    const sim = read('docs/sim.md');
    const table = sim.slice(
      sim.indexOf('## Built-in scenarios'),
      sim.indexOf('\n## ', sim.indexOf('## Built-in scenarios') + 1),
    );
    const rows = [...table.matchAll(/^\| `([a-z-]+)`/gm)].map((x) => x[1]).sort();
    expect(rows).toEqual(names);
  });
});

/** The pages that document a command's flags: its own, and for the proxy its sidecar mode's. */
function flagDocs(command: CommandName): string[] {
  return command === 'proxy' ? ['docs/proxy.md', 'docs/sidecar.md'] : [`docs/${command}.md`];
}

describe.each(COMMANDS)('evenlb %s flags in the docs', (command) => {
  const flags = flagsOf(command);
  const pages = flagDocs(command);

  test(`${pages.join(' + ')} describe every flag`, () => {
    const doc = pages.map(read).join('\n');
    const missing = [...flags.keys()]
      .filter((f) => f.startsWith('--') && f !== '--help')
      .filter((f) => !new RegExp(`${f}(?![\\w-])`).test(doc));
    expect(missing).toEqual([]);
  });

  test('every flag the docs give it exists', () => {
    const unknown: string[] = [];
    let checked = 0;
    const check = (flag: string, where: string): void => {
      checked++;
      if (!flags.has(flag)) unknown.push(`${flag} in ${where}`);
    };
    for (const { path, text } of docFiles()) {
      for (const use of commandLineFlags(text)) {
        if (use.command === command) check(use.flag, `${path}: "${use.line.trim()}"`);
      }
    }
    for (const page of pages) {
      for (const [cell] of flagRows(read(page))) {
        for (const flag of flagsIn(cell)) check(flag, `the flag table of ${page}`);
      }
    }
    for (const [, span] of readmeSection(command).matchAll(/`(--[^`]*)`/g)) {
      for (const flag of flagsIn(span!)) check(flag, `README.md: \`${span}\``);
    }
    expect(unknown).toEqual([]);
    // The docs give flags for every command: a parser that found none would check nothing.
    expect(checked).toBeGreaterThan(flags.size / 2);
  });

  test('numeric defaults in its flag table are the real defaults', () => {
    const wrong: string[] = [];
    for (const [cell, second] of pages.flatMap((page) => flagRows(read(page)))) {
      if (!/^`?\d+`?$/.test(second)) continue;
      const option = flags.get(flagsIn(cell)[0]!);
      const documented = Number(second.replace(/`/g, ''));
      if (option !== undefined && option.defaultValue !== documented) {
        wrong.push(`${cell}: documented ${documented}, default ${String(option.defaultValue)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
