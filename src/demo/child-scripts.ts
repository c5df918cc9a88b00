/**
 * Where the built child entry points live. The demo's own code may sit in `dist/cli/`, in a
 * shared chunk at `dist/`, or in `dist/demo/`, depending on how the bundler split it; the child
 * entries are always `dist/demo/<name>.js` (pod, load, and the sidecar phase's sidecar-pod and
 * plain-app).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The absolute path of the built `demo/<name>.js` entry; throws when the package is not built. */
export function childScript(name: 'pod' | 'load' | 'sidecar-pod' | 'plain-app'): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [
    join(here, 'demo', `${name}.js`),
    join(here, '..', 'demo', `${name}.js`),
    join(here, `${name}.js`),
  ];
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error(`cannot find the demo's ${name} entry (looked in ${candidates.join(', ')}); run "npm run build"`);
}

/** The built CLI (`dist/cli/main.js`), used to start `evenlb proxy` as a real child process. */
export function cliScript(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'cli', 'main.js'), join(here, '..', 'cli', 'main.js'), join(here, 'main.js')];
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error(`cannot find the evenlb CLI (looked in ${candidates.join(', ')}); run "npm run build"`);
}
