// What `npm install evenlb` costs a new project on disk: `npm pack` of this repository (its
// `files`: dist/ as bench/run.mjs has just built it, deploy/, README.md), then in an empty folder
// `npm install <tarball> undici`, as a user adding evenlb and undici would. Prints the size of
// node_modules as `du` measures it (MB of disk blocks, `du -sm` as the target is stated, and
// KiB for precision), the tarball's size, and the packages that take the room, largest first.
// Optional peers (@kubernetes/client-node, @grpc/grpc-js) are not installed, as npm does not.
// Target: node_modules ≤ 25 MB.
//
// Run: npm run bench -- install   (needs the npm registry or a warm npm cache)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { printTable, writeResult } from './machine.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const TARGET_MB = 25;
const TOP = 12;

const npm = (args, cwd) =>
  execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
const duKiB = (path) => Number(execFileSync('du', ['-sk', path], { encoding: 'utf8' }).split('\t')[0]);
const duMB = (path) => Number(execFileSync('du', ['-sm', path], { encoding: 'utf8' }).split('\t')[0]);

/** Every package folder directly under node_modules (scoped ones as `@scope/name`). */
function packageDirs(modules) {
  const out = [];
  for (const name of readdirSync(modules)) {
    if (name.startsWith('.')) continue;
    if (name.startsWith('@')) for (const sub of readdirSync(join(modules, name))) out.push(`${name}/${sub}`);
    else out.push(name);
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'evenlb-install-bench-'));
try {
  const packed = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', dir], repo))[0];
  const tarball = join(dir, packed.filename);
  const app = join(dir, 'app');
  execFileSync('mkdir', ['-p', app]);
  writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'app', version: '1.0.0', private: true })}\n`);
  npm(['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, 'undici'], app);

  const modules = join(app, 'node_modules');
  const totalMB = duMB(modules);
  const totalKiB = duKiB(modules);
  const packages = packageDirs(modules)
    .map((name) => ({ package: name, KiB: duKiB(join(modules, name)) }))
    .sort((a, b) => b.KiB - a.KiB);
  const installed = JSON.parse(npm(['ls', '--all', '--json'], app));
  const evenlbDeps = Object.keys(installed.dependencies?.evenlb?.dependencies ?? {}).sort();

  printTable(packages.slice(0, TOP).map((p) => ({ package: p.package, MiB: p.KiB / 1024 })));
  process.stdout.write(
    `\nnode_modules: ${totalMB} MB (du -sm; ${(totalKiB / 1024).toFixed(1)} MiB by du -sk), ${packages.length} packages; ` +
      `tarball ${(packed.size / 1024).toFixed(0)} KiB, unpacked ${(packed.unpackedSize / 1024).toFixed(0)} KiB. ` +
      `Target ≤ ${TARGET_MB} MB: ${totalMB <= TARGET_MB ? 'met' : 'NOT met'}\n`,
  );
  writeResult('install', {
    description:
      'npm pack, then npm install <tarball> undici in an empty folder: node_modules on disk (du), largest packages',
    targetMB: TARGET_MB,
    nodeModulesMB: totalMB,
    nodeModulesKiB: totalKiB,
    packageCount: packages.length,
    tarballBytes: packed.size,
    unpackedBytes: packed.unpackedSize,
    evenlbDependencies: evenlbDeps,
    largest: packages.slice(0, TOP),
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
