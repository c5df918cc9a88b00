/**
 * evenlb installed as an application sees it, in a temporary folder and without npm: the
 * folder's `node_modules` links exactly the packages asked for from the repository's
 * node_modules (so a package left out cannot be resolved from there, as when it was never
 * installed), and with `withPackage` also holds `node_modules/evenlb`: the package.json and a
 * fresh build of the sources with the package's own tsup configuration (declarations off), so
 * `import('evenlb')` resolves through the `exports` map to what `npm pack` would ship, never to
 * a stale dist/.
 *
 * @example
 * const install = await isolatedInstall({ packages: runtimeDependencies(), withPackage: true });
 * spawnSync(process.execPath, ['-e', "await import('evenlb')"], { cwd: install.dir });
 * await install.remove();
 */
import { cpSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { repoRoot } from './run-cli.js';

export interface IsolatedInstall {
  /** The application folder (run `node` here). */
  readonly dir: string;
  remove(): Promise<void>;
}

export interface IsolatedInstallOptions {
  /** Package names to link into `node_modules` (their own dependencies resolve in the repository). */
  readonly packages: readonly string[];
  /** Also build evenlb into `node_modules/evenlb`. */
  readonly withPackage?: boolean;
}

/** The package's runtime `dependencies`, from package.json. */
export function runtimeDependencies(): string[] {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  return Object.keys(pkg.dependencies);
}

/** Creates the folder; `remove()` deletes it. */
export async function isolatedInstall(options: IsolatedInstallOptions): Promise<IsolatedInstall> {
  const dir = await mkdtemp(join(tmpdir(), 'evenlb-install-'));
  for (const name of options.packages) {
    const link = join(dir, 'node_modules', name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(repoRoot, 'node_modules', name), link, 'dir');
  }
  if (options.withPackage === true) {
    const target = join(dir, 'node_modules', 'evenlb');
    mkdirSync(target, { recursive: true });
    cpSync(join(repoRoot, 'package.json'), join(target, 'package.json'));
    const { build } = await import('tsup');
    const { default: config } = (await import(join(repoRoot, 'tsup.config.ts'))) as {
      default: Parameters<typeof build>[0];
    };
    await build({
      ...config,
      entry: Object.fromEntries(
        Object.entries(config.entry as Record<string, string>).map(([name, file]) => [name, join(repoRoot, file)]),
      ),
      tsconfig: join(repoRoot, 'tsconfig.json'),
      outDir: join(target, 'dist'),
      dts: false,
      sourcemap: false,
      silent: true,
      config: false,
    });
  }
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
