// Compares two V8 CPU profiles (.cpuprofile, e.g. from `node bench/proxy-ab.mjs … --cpu-prof DIR`)
// by self time per function: each function's share of the busy samples (idle, program and
// garbage-collector pseudo-frames reported apart), A beside B, sorted by the largest difference.
// Shares rather than milliseconds, so two runs of different length or load compare; multiply a
// share by the run's CPU µs per request to read µs per request. Functions of the bundle (dist/chunk-*)
// are keyed by name, since chunk names change from build to build.
//
// --skip-ms drops each profile's first milliseconds (start-up: module loading, config parsing).
//
// Usage: node bench/cpu-profile-diff.mjs A.cpuprofile B.cpuprofile [--top 40] [--skip-ms 3000]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { printTable } from './machine.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '40' }, 'skip-ms': { type: 'string', default: '3000' } },
});
if (positionals.length !== 2) {
  process.stderr.write('usage: node bench/cpu-profile-diff.mjs A.cpuprofile B.cpuprofile [--top N]\n');
  process.exit(2);
}
const TOP = Number(values.top);
const SKIP_US = Number(values['skip-ms']) * 1000;

/** Self samples per function key (name file:line), and the busy total. */
function selfShares(path) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const counts = new Map();
  let atUs = 0;
  let kept = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    atUs += profile.timeDeltas[i];
    if (atUs < SKIP_US) continue;
    const id = profile.samples[i];
    counts.set(id, (counts.get(id) ?? 0) + 1);
    kept++;
  }
  const self = new Map();
  let busy = 0;
  let idle = 0;
  for (const [id, count] of counts) {
    const f = byId.get(id).callFrame;
    if (f.functionName === '(idle)') {
      idle += count;
      continue;
    }
    // Bundled chunks are named by content hash, which differs between trees: key their
    // functions by name alone (same-named functions in the bundle share a row).
    const bundled = /\/dist\/chunk-[^/]*\.js$/.test(f.url);
    const file = f.url.replace(/^.*\/(node_modules|dist|internal)\//, '$1/');
    const key = `${f.functionName || '(anonymous)'} ${bundled ? 'dist' : `${file}:${f.lineNumber + 1}`}`;
    self.set(key, (self.get(key) ?? 0) + count);
    busy += count;
  }
  return { self, busy, idle, total: kept };
}

const [a, b] = positionals.map(selfShares);
const keys = new Set([...a.self.keys(), ...b.self.keys()]);
const rows = [...keys].map((key) => {
  const sa = (a.self.get(key) ?? 0) / a.busy;
  const sb = (b.self.get(key) ?? 0) / b.busy;
  return {
    function: key.length > 90 ? `${key.slice(0, 87)}...` : key,
    aPct: sa * 100,
    bPct: sb * 100,
    diffPct: (sb - sa) * 100,
  };
});
process.stdout.write(
  `busy samples: A ${a.busy} of ${a.total}, B ${b.busy} of ${b.total}\n\nlargest self-time share differences (B − A, % of busy samples)\n`,
);
printTable(rows.sort((x, y) => Math.abs(y.diffPct) - Math.abs(x.diffPct)).slice(0, TOP));
process.stdout.write('\nlargest self-time shares in B\n');
printTable(rows.sort((x, y) => y.bPct - x.bPct).slice(0, TOP));
