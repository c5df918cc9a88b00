/**
 * Writes src/proxy/config/config-validator.generated.js from the proxy configuration's JSON
 * schema (see config-validator-source.mjs). Run with `npm run generate` after changing the
 * schema; the test `src/proxy/config/config-validator.test.ts` fails until then.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { configValidatorSource, GENERATED_PATH } from './config-validator-source.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dir = mkdtempSync(join(tmpdir(), 'evenlb-config-schema-'));
try {
  const outfile = join(dir, 'config-schema.mjs');
  await build({
    entryPoints: [join(root, 'src/proxy/config/config-schema.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    packages: 'external',
    outfile,
    logLevel: 'error',
  });
  const { proxyConfigSchema } = await import(pathToFileURL(outfile).href);
  writeFileSync(join(root, GENERATED_PATH), configValidatorSource(proxyConfigSchema));
  console.log(`wrote ${GENERATED_PATH}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
