/**
 * The package's API is deliberate, entry point by entry point (`evenlb`, `evenlb/server`,
 * `evenlb/grpc`, `evenlb/proxy`): a bounded number of runtime names, every exported name and
 * its shape recorded in `etc/<entry>.api.txt`, every named type a signature reaches exported,
 * every runtime name described in docs/api.md. A change to the API changes those files in the
 * same commit, so it shows in review. Checked against the runtime names of each source entry,
 * the declarations the compiler sees in it, and (when built) the names its `.d.ts` declares;
 * package.json's `exports` map lists exactly these entry points.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type ts from 'typescript';
import { beforeAll, describe, expect, test } from 'vitest';
import { type ApiEntry, apiEntries, apiProgram, type EntryPoint, renderApiReport } from './api-report.js';
import { unexportedReachableTypes } from './reachable-types.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const ENTRY_POINTS: readonly EntryPoint[] = [
  {
    specifier: 'evenlb',
    source: 'src/index.ts',
    declarations: 'dist/index.d.ts',
    report: 'etc/evenlb.api.txt',
    maxRuntimeNames: 50,
  },
  {
    specifier: 'evenlb/server',
    source: 'src/server/index.ts',
    declarations: 'dist/server/index.d.ts',
    report: 'etc/evenlb-server.api.txt',
    maxRuntimeNames: 10,
  },
  {
    specifier: 'evenlb/grpc',
    source: 'src/grpc/index.ts',
    declarations: 'dist/grpc/index.d.ts',
    report: 'etc/evenlb-grpc.api.txt',
    maxRuntimeNames: 10,
  },
  {
    specifier: 'evenlb/proxy',
    source: 'src/proxy/index.ts',
    declarations: 'dist/proxy/index.d.ts',
    report: 'etc/evenlb-proxy.api.txt',
    maxRuntimeNames: 10,
  },
];

/**
 * Members not walked for reachable types, each a known leak of internals into a signature:
 * `ProxyServer.clusters` hands out the proxy's `ProxyCluster` objects (pools, upstream
 * connections) for its own tests. A path that no longer exists fails the test, so the list
 * only shrinks.
 */
const KNOWN_LEAKS: Readonly<Record<string, readonly string[]>> = {
  'evenlb/proxy': ['ProxyServer.clusters'],
};

const abs = (path: string): string => join(repo, path);

let program: ts.Program;
const entriesOf = new Map<string, ApiEntry[]>();

let builtProgram: ts.Program | undefined;
/**
 * One compiler program over every built `.d.ts` there is, made on first use and shared by the
 * entry points' checks (a module's exports do not depend on the program's other roots; one
 * program per entry parsed @types/node and the libraries four times).
 */
function declarationsProgram(): ts.Program {
  builtProgram ??= apiProgram(ENTRY_POINTS.map((e) => abs(e.declarations)).filter((file) => existsSync(file)));
  return builtProgram;
}

beforeAll(() => {
  program = apiProgram(ENTRY_POINTS.map((e) => abs(e.source)));
  for (const entry of ENTRY_POINTS) {
    const entries = apiEntries(program, abs(entry.source));
    entriesOf.set(entry.specifier, entries);
    if (process.env.UPDATE_API_REPORT === '1') writeFileSync(abs(entry.report), renderApiReport(entry, entries));
  }
}, 120_000);

test('package.json exports exactly these entry points', () => {
  const pkg = JSON.parse(readFileSync(abs('package.json'), 'utf8')) as {
    exports: Record<string, string | { types: string; import: string }>;
  };
  const listed = Object.entries(pkg.exports)
    .filter(([path]) => path !== './package.json')
    .map(([path, target]) => ({ path, target }));
  expect(listed.map((l) => `evenlb${l.path.slice(1)}`).sort()).toEqual(ENTRY_POINTS.map((e) => e.specifier).sort());
  for (const { path, target } of listed) {
    const entry = ENTRY_POINTS.find((e) => e.specifier === `evenlb${path.slice(1)}`)!;
    expect(target).toEqual({
      types: `./${entry.declarations}`,
      import: `./${entry.declarations.replace(/\.d\.ts$/, '.js')}`,
    });
  }
});

describe.each(ENTRY_POINTS)('$specifier', (entry) => {
  const entries = (): ApiEntry[] => entriesOf.get(entry.specifier)!;

  test(`${entry.report} matches ${entry.source}`, () => {
    expect(readFileSync(abs(entry.report), 'utf8')).toBe(renderApiReport(entry, entries()));
  });

  test(`at most ${entry.maxRuntimeNames} runtime names, exactly those in the report`, async () => {
    const runtime = Object.keys((await import(abs(entry.source))) as object).sort();
    expect(runtime.length).toBeLessThanOrEqual(entry.maxRuntimeNames);
    expect(runtime).toEqual(
      entries()
        .filter((e) => e.value)
        .map((e) => e.name)
        .sort(),
    );
  });

  test('every named type a signature reaches is exported by some entry point', () => {
    const leaks = KNOWN_LEAKS[entry.specifier] ?? [];
    const others = ENTRY_POINTS.filter((e) => e !== entry).map((e) => abs(e.source));
    const found = unexportedReachableTypes(program, abs(entry.source), others, leaks);
    expect(found.unexported.map((u) => `${u.name} (src/${u.file}, via ${u.via})`)).toEqual([]);
    expect(found.skipped).toEqual([...leaks].sort());
  });

  test('every runtime name is described in docs/api.md', () => {
    const doc = readFileSync(abs('docs/api.md'), 'utf8');
    const missing = entries()
      .filter((e) => e.value && !doc.includes(`\`${e.name}\``))
      .map((e) => e.name);
    expect(missing).toEqual([]);
  });

  // Names only: the bundled declarations re-export a class exported type-only (`RetryPolicy`)
  // from a shared chunk without its `type` marker, so value and type cannot be told apart there.
  test.skipIf(!existsSync(abs(entry.declarations)))(`${entry.declarations} declares the same names`, () => {
    const built = apiEntries(declarationsProgram(), abs(entry.declarations)).map((e) => e.name);
    expect(built.sort()).toEqual(
      entries()
        .map((e) => e.name)
        .sort(),
    );
  });
});

test('internals stay internal', async () => {
  const names = new Set(Object.keys((await import('../../src/index.js')) as object));
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
    'acquireServiceWatch',
    'ProxyServer',
  ]) {
    expect(names.has(internal), internal).toBe(false);
  }
  const server = new Set(Object.keys((await import('../../src/server/index.js')) as object));
  const grpc = new Set(Object.keys((await import('../../src/grpc/index.js')) as object));
  expect(server.has('recyclerOptionsSpec')).toBe(false);
  expect(grpc.has('grpcBalancingSpec')).toBe(false);
});
