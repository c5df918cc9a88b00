// Machine facts and result writing shared by every benchmark: each result file records the date,
// the CPU model, the core count and the Node version next to its figures.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export function machine() {
  const c = cpus();
  return {
    date: new Date().toISOString(),
    cpu: c[0]?.model ?? 'unknown',
    cores: c.length,
    memoryBytes: totalmem(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
}

/** Writes bench/results/<name>.json (latest) and prints where. */
export function writeResult(name, data) {
  const dir = join(here, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.json`);
  writeFileSync(file, `${JSON.stringify({ machine: machine(), ...data }, null, 2)}\n`);
  process.stdout.write(`results written to ${file}\n`);
}

/** Prints rows (array of objects) as an aligned text table. */
export function printTable(rows) {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]);
  const cell = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : String(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals) => vals.map((v, i) => v.padStart(widths[i])).join('  ');
  process.stdout.write(`${line(cols)}\n${line(widths.map((w) => '-'.repeat(w)))}\n`);
  for (const r of rows) process.stdout.write(`${line(cols.map((c) => cell(r[c])))}\n`);
}
