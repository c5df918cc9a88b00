#!/usr/bin/env node
// Runs every benchmark in bench/ (files named *.bench.mjs), one child process each, in name order.
// Benchmarks import the built package from dist/, so the package is built first.
// Usage: npm run bench [-- name-filter ... [--option value ...]]: arguments from the first one
// starting with "--" on are passed to each benchmark (e.g. `npm run bench -- soak --minutes 2`).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const firstOption = args.findIndex((a) => a.startsWith('--'));
const filters = firstOption < 0 ? args : args.slice(0, firstOption);
const options = firstOption < 0 ? [] : args.slice(firstOption);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

const build = spawnSync('npx', ['tsup', '--silent'], { cwd: join(here, '..'), stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

let failed = 0;
for (const f of files) {
  process.stdout.write(`\n=== ${f} ===\n`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, f), ...options], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    process.stdout.write(`!!! ${f} exited with ${r.status ?? r.signal}\n`);
  }
}
if (files.length === 0) process.stdout.write('no benchmarks matched\n');
process.exit(failed === 0 ? 0 : 1);
