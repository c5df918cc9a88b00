/**
 * The package root's API is deliberate: at most 50 runtime names, every exported name and its
 * shape recorded in `etc/evenlb.api.txt`. A change to the API changes that file in the same
 * commit, so it shows in review. Checked three ways: the runtime names of `src/index.ts`, the
 * declarations the compiler sees in it, and (when built) the names `dist/index.d.ts` declares.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import * as root from '../../src/index.js';
import { apiEntries, renderApiReport } from './api-report.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const reportPath = join(repo, 'etc', 'evenlb.api.txt');
const MAX_RUNTIME_NAMES = 50;

describe('public API', () => {
  const entries = apiEntries(join(repo, 'src', 'index.ts'));
  const text = renderApiReport(entries);
  if (process.env.UPDATE_API_REPORT === '1') writeFileSync(reportPath, text);

  test('etc/evenlb.api.txt matches src/index.ts', () => {
    expect(readFileSync(reportPath, 'utf8')).toBe(text);
  });

  test(`the package root exports at most ${MAX_RUNTIME_NAMES} runtime names, exactly those in the report`, () => {
    const runtime = Object.keys(root).sort();
    expect(runtime.length).toBeLessThanOrEqual(MAX_RUNTIME_NAMES);
    const reported = entries.filter((e) => e.value).map((e) => e.name);
    expect(runtime).toEqual([...reported].sort());
  });

  test('internals stay internal', () => {
    const names = new Set(Object.keys(root));
    for (const internal of [
      'EndpointPool',
      'PooledConnection',
      'H2SessionPool',
      'toLegacyHandler',
      'failHandler',
      'opt',
      'parseOptions',
      'clusterOnlySpec',
      'SERVICE_ACCOUNT_DIR',
      'discoveryLogger',
    ]) {
      expect(names.has(internal), internal).toBe(false);
    }
  });

  test.skipIf(!existsSync(join(repo, 'dist', 'index.d.ts')))('dist/index.d.ts declares the same names', () => {
    const built = apiEntries(join(repo, 'dist', 'index.d.ts')).map((e) => `${e.value ? 'value' : 'type'} ${e.name}`);
    expect(built.sort()).toEqual(entries.map((e) => `${e.value ? 'value' : 'type'} ${e.name}`).sort());
  });
});
