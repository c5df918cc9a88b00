/** The package version, read once from the nearest package.json above this module (src/ or dist/). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'evenlb' && typeof pkg.version === 'string') return pkg.version;
    }
    dir = dirname(dir);
  }
  return '0.0.0';
}

export const version: string = findVersion();
