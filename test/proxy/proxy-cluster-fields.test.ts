/**
 * Cluster options are declared once: the proxy file's `clusters[]` fields come from
 * `clusterOptionsSpec` through one table (`cluster-config-fields.ts`). These tests fail when a
 * spec field is neither reachable from the proxy file nor listed as client-only, when the
 * proxy schema or `ClusterConfig` drifts from the table, when a shared field's file schema is
 * not the spec's, or when a value set in a file does not reach the `Cluster`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  type ClusterOptions,
  clusterOptionsSpec,
  clusterTlsSpec,
  parseClusterOptions,
} from '../../src/cluster/cluster-options.js';
import type { JsonSchema, Spec } from '../../src/core/options.js';
import { StaticEndpointSource } from '../../src/discovery/static-endpoint-source.js';
import {
  CLIENT_ONLY_CLUSTER_OPTIONS,
  checkClusterConfig,
  clusterOptionsOf,
  type ProxyFieldTable,
  proxyClusterFields,
  proxyPathOf,
  withClusterDefaults,
} from '../../src/proxy/config/cluster-config-fields.js';
import {
  type ClusterConfig,
  type ClusterTlsConfig,
  proxyConfigSchema,
  proxyOnlyClusterProperties,
} from '../../src/proxy/config/config-schema.js';
import { parseProxyConfig } from '../../src/proxy/config/proxy-config.js';
import { ProxyCluster } from '../../src/proxy/upstream/proxy-cluster.js';
import { repoRoot } from '../support/run-cli.js';

const clusterItem = proxyConfigSchema.properties.clusters.items as JsonSchema & {
  properties: Record<string, JsonSchema>;
};

/** The schema of dotted `path` inside an object schema. */
function schemaAt(schema: JsonSchema, path: string): JsonSchema | undefined {
  let s: JsonSchema | undefined = schema;
  for (const p of path.split('.')) s = (s?.properties as Record<string, JsonSchema> | undefined)?.[p];
  return s;
}

function checkCoverage(spec: Spec, table: ProxyFieldTable, clientOnly: Readonly<Record<string, string>>): void {
  const specKeys = Object.keys(spec).sort();
  const reachable = Object.keys(table);
  const listed = Object.keys(clientOnly);
  expect([...reachable, ...listed].sort(), 'every spec field is in the proxy table or client-only').toEqual(specKeys);
  expect(
    reachable.filter((k) => listed.includes(k)),
    'no field is in both',
  ).toEqual([]);
}

describe('proxy cluster fields: one declaration', () => {
  it('reaches every cluster option from the proxy file, or lists it as client-only with a reason', () => {
    checkCoverage(clusterOptionsSpec, proxyClusterFields, CLIENT_ONLY_CLUSTER_OPTIONS);
    const tls = proxyClusterFields.tls.nested;
    checkCoverage(tls.spec, tls.fields, tls.clientOnly);
    expect(tls.spec).toBe(clusterTlsSpec);
    for (const reason of Object.values(CLIENT_ONLY_CLUSTER_OPTIONS)) expect(reason.length).toBeGreaterThan(10);
  });

  it('builds the proxy schema of clusters[] from the table and the proxy-only fields, nothing else', () => {
    const heads = new Set(Object.values(proxyClusterFields).map((f) => f.path.split('.')[0]));
    expect(Object.keys(clusterItem.properties).sort()).toEqual(
      [...heads, ...Object.keys(proxyOnlyClusterProperties)].sort(),
    );
    expect(clusterItem.additionalProperties).toBe(false);
    expect(clusterItem.required).toEqual(['name', 'target']);
    for (const [option, f] of Object.entries(proxyClusterFields as ProxyFieldTable)) {
      const inFile = schemaAt(clusterItem, f.path);
      expect(inFile, `${option} at ${f.path}`).toBeDefined();
      // Unless the table says the file spells it otherwise, the file's schema is the spec's.
      if (f.schema === undefined && f.nested === undefined) {
        expect(inFile, option).toEqual(clusterOptionsSpec[option as keyof typeof clusterOptionsSpec].schema);
      }
    }
  });

  it('keeps the ClusterConfig type in step with the table (checked by tsc)', () => {
    type Head<P> = P extends `${infer H}.${string}` ? H : P;
    type Paths = (typeof proxyClusterFields)[keyof typeof proxyClusterFields]['path'];
    expectTypeOf<keyof ClusterConfig>().toEqualTypeOf<Head<Paths> | keyof typeof proxyOnlyClusterProperties>();
    // The renamed, nested fields: the same keys as the table's paths, the spec's value types.
    type Under<P, H extends string> = P extends `${H}.${infer R}` ? R : never;
    type Lifetime = NonNullable<ClusterConfig['lifetime']>;
    expectTypeOf<keyof Lifetime>().toEqualTypeOf<Under<Paths, 'lifetime'>>();
    expectTypeOf<keyof ClusterConfig['retries']>().toEqualTypeOf<Under<Paths, 'retries'>>();
    expectTypeOf<keyof ClusterTlsConfig>().toEqualTypeOf<keyof typeof proxyClusterFields.tls.nested.fields>();
    expectTypeOf<Lifetime['maxConnectionAgeMs']>().toEqualTypeOf<ClusterOptions['maxConnectionAgeMs']>();
    expectTypeOf<Lifetime['maxRequestsPerConnection']>().toEqualTypeOf<ClusterOptions['maxRequestsPerConnection']>();
    expectTypeOf<Lifetime['idleTimeoutMs']>().toEqualTypeOf<ClusterOptions['idleTimeoutMs']>();
    expectTypeOf<ClusterConfig['retries']['idempotent']>().toEqualTypeOf<
      NonNullable<ClusterOptions['retryIdempotent']>
    >();
    expectTypeOf<ClusterConfig['requestTimeoutMs']>().toEqualTypeOf<NonNullable<ClusterOptions['headersTimeoutMs']>>();
  });

  it('maps proxy paths back for messages', () => {
    expect(proxyPathOf('retryIdempotent')).toBe('retries.idempotent');
    expect(proxyPathOf('headersTimeoutMs')).toBe('requestTimeoutMs');
    expect(proxyPathOf('herdingGuard.minResponses')).toBe('herdingGuard.minResponses');
    expect(proxyPathOf('tls.rejectUnauthorized')).toBe('tls.rejectUnauthorized');
  });
});

/** One file value per shared field, and the `Cluster` option it must become. */
const samples: Record<string, { file: string; option: unknown }> = {
  name: { file: 'name: web', option: 'web' },
  target: { file: 'target: "static:///127.0.0.1:1"', option: 'static:///127.0.0.1:1' },
  policy: { file: 'policy: round-robin', option: 'round-robin' },
  policyOptions: { file: 'policyOptions: {}', option: {} },
  maxRequestsPerConnection: { file: 'lifetime: { maxRequestsPerConnection: 7 }', option: 7 },
  maxConnectionAgeMs: { file: 'lifetime: { maxConnectionAgeMs: 8000 }', option: 8000 },
  idleTimeoutMs: { file: 'lifetime: { idleTimeoutMs: 9000 }', option: 9000 },
  connectionsPerEndpoint: { file: 'connectionsPerEndpoint: 3', option: 3 },
  connectTimeoutMs: { file: 'connectTimeoutMs: 1234', option: 1234 },
  headersTimeoutMs: { file: 'requestTimeoutMs: 2345', option: 2345 },
  bodyTimeoutMs: { file: 'bodyTimeoutMs: 3456', option: 3456 },
  retryConnectFailures: { file: 'retries: { connectFailures: 4 }', option: 4 },
  retryIdempotent: { file: 'retries: { idempotent: 5 }', option: 5 },
  retryOn: { file: 'retries: { on: [503] }', option: [503] },
  outlierDetection: {
    file: 'outlierDetection: { consecutiveFailures: 9 }',
    option: { consecutiveFailures: 9, baseEjectionMs: 30_000, maxEjectionMs: 300_000, maxEjectionPercent: 50 },
  },
  slowStartMs: { file: 'slowStartMs: 1000', option: 1000 },
  slowStartAggression: { file: 'slowStartAggression: 2', option: 2 },
  slowStartMinWeightPercent: { file: 'slowStartMinWeightPercent: 20', option: 20 },
  herdingGuard: { file: 'herdingGuard: false', option: false },
  zoneRouting: {
    file: 'zoneRouting: { zone: z1, mode: "on" }',
    option: { zone: 'z1', mode: 'on', loadBand: 0.2, probePercent: 2, maxSpillPercent: 90 },
  },
  pushback: { file: 'pushback: { windowMs: 2000 }', option: { windowMs: 2000, factor: 10 } },
  loadProbes: {
    file: 'loadProbes: { port: 9091 }',
    option: {
      port: 9091,
      path: '/.well-known/evenlb/load',
      timeoutMs: 500,
      maxConcurrent: 4,
      maxQueued: 64,
      tls: false,
    },
  },
  tls: {
    file: 'tls: { servername: api.internal, rejectUnauthorized: false }',
    option: { ca: undefined, cert: undefined, key: undefined, servername: 'api.internal', rejectUnauthorized: false },
  },
};

const LISTENER = 'listeners: [{ address: "127.0.0.1:0" }]\n';

describe('a value set in the proxy file reaches the Cluster', () => {
  it('has a sample for every shared field', () => {
    expect(Object.keys(samples).sort()).toEqual(Object.keys(proxyClusterFields).sort());
  });

  it.each(Object.entries(samples))('%s', async (option, { file }) => {
    const base: Record<string, string> = { name: 'name: web', target: 'target: "static:///127.0.0.1:1"' };
    base[option] = file;
    const config = parseProxyConfig(`${LISTENER}clusters:\n  - { ${Object.values(base).join(', ')} }\n`);
    const cluster = new ProxyCluster(config.clusters[0] as ClusterConfig, {
      source: new StaticEndpointSource([{ address: '127.0.0.1', port: 1 }]),
    });
    try {
      const parsed = cluster.cluster.options as unknown as Record<string, unknown>;
      const expected = (samples[option] as { option: unknown }).option;
      // `target` is the injected source here; the file's URI is in the config.
      if (option === 'target') expect(config.clusters[0]?.target).toBe(expected);
      else expect(parsed[option]).toEqual(expected);
    } finally {
      await cluster.close();
    }
  });

  it('fills the proxy defaults exactly as before (a minimal cluster)', () => {
    const config = parseProxyConfig(`${LISTENER}clusters: [{ name: web, target: "static:///127.0.0.1:1" }]\n`);
    expect(config.clusters[0]).toStrictEqual({
      name: 'web',
      target: 'static:///127.0.0.1:1',
      policy: 'least-request',
      protocol: 'http1',
      retries: { connectFailures: 2, idempotent: 1, on: [502, 503, 504] },
      retryBufferBytes: 65_536,
      connectTimeoutMs: 5_000,
      requestTimeoutMs: 300_000,
      bodyTimeoutMs: 300_000,
    });
    expect(Object.isFrozen(config.clusters[0]?.retries)).toBe(true);
    const withTls = parseProxyConfig(
      `${LISTENER}clusters: [{ name: web, target: "static:///127.0.0.1:1", tls: { servername: a.b } }]\n`,
    );
    expect(withTls.clusters[0]?.tls).toStrictEqual({ servername: 'a.b', rejectUnauthorized: true });
  });
});

describe('bad shared fields name the file path, the expectation and the value', () => {
  const cases: { yaml: string; message: RegExp }[] = [
    { yaml: 'retries: { idempotent: 11 }', message: /"clusters\[0\]\.retries\.idempotent" must be <= 10; received 11/ },
    { yaml: 'requestTimeoutMs: -1', message: /"clusters\[0\]\.requestTimeoutMs" must be >= 0; received -1/ },
    { yaml: 'connectTimeoutMs: 0', message: /"clusters\[0\]\.connectTimeoutMs" must be > 0; received 0/ },
    {
      yaml: 'lifetime: { maxRequestsPerConnection: 1.5 }',
      message: /"clusters\[0\]\.lifetime\.maxRequestsPerConnection" must be integer; received 1\.5/,
    },
    {
      yaml: 'outlierDetection: { consecutive: 3 }',
      message: /"clusters\[0\]\.outlierDetection\.consecutive" is not a known field/,
    },
    { yaml: 'tls: { cert: /etc/passwd }', message: /"clusters\[0\]\.tls\.cert" is not a known field/ },
    { yaml: 'retryIdempotent: 1', message: /"clusters\[0\]\.retryIdempotent" is not a known field/ },
    { yaml: 'policy: ""', message: /"clusters\[0\]\.policy" must NOT have fewer than 1 characters; received ""/ },
  ];
  it.each(cases)('$yaml', ({ yaml, message }) => {
    expect(() =>
      parseProxyConfig(`${LISTENER}clusters: [{ name: web, target: "static:///127.0.0.1:1", ${yaml} }]\n`),
    ).toThrow(message);
  });
});

describe('the configurations in docs and deploy still validate', () => {
  const ajv = new Ajv({ strict: true, allowUnionTypes: true });
  const validate = ajv.compile(proxyConfigSchema);
  const files = ['docs/proxy.md', 'docs/slow-start-and-zones.md'];

  /** Proxy configs: YAML blocks of the docs with `clusters:` (a listener added to a fragment without one). */
  function docConfigs(file: string): unknown[] {
    const text = readFileSync(join(repoRoot, file), 'utf8');
    const blocks = [...text.matchAll(/```ya?ml\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    return blocks
      .filter((b) => /^clusters:/m.test(b))
      .map((b) => (/^listeners:/m.test(b) ? b : `${LISTENER}${b}`))
      .map((b) => parseAllDocuments(b)[0]?.toJS());
  }

  it.each(files)('%s', (file) => {
    const configs = docConfigs(file);
    expect(configs.length).toBeGreaterThan(0);
    for (const config of configs) {
      expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
      for (const c of (config as { clusters: Record<string, unknown>[] }).clusters) {
        // The shared fields pass the cluster spec itself (file paths are not read here).
        expect(() => parseClusterOptions(clusterOptionsOf(withClusterDefaults(c), (p) => p))).not.toThrow();
      }
    }
  });
});

describe('checkClusterConfig: the cluster spec itself checks a normalized entry', () => {
  const base = { name: 'web', target: 'static:///127.0.0.1:1' };
  it.each([
    {
      config: { ...base, retries: { idempotent: 11 } },
      message: 'proxy config: "clusters[2].retries.idempotent" must be an integer between 0 and 10; received 11',
    },
    {
      config: { ...base, requestTimeoutMs: 'soon' },
      message: 'proxy config: "clusters[2].requestTimeoutMs" must be a finite number >= 0; received "soon"',
    },
    {
      config: { ...base, herdingGuard: { share: 2 } },
      message: 'proxy config: "clusters[2].herdingGuard.share" is not a known field (known options are:',
    },
    {
      config: { ...base, tls: { rejectUnauthorized: 'no' } },
      message: 'proxy config: "clusters[2].tls.rejectUnauthorized" must be a boolean; received "no"',
    },
  ])('names the file path: $message', ({ config, message }) => {
    expect(() => checkClusterConfig('clusters[2]', config)).toThrow(
      expect.objectContaining({ code: 'EVENLB_INVALID_CONFIG', message: expect.stringContaining(message) }),
    );
  });

  it('accepts a valid entry, reading no file', () => {
    expect(() => checkClusterConfig('clusters[0]', { ...base, tls: { ca: '/nonexistent/ca.pem' } })).not.toThrow();
  });
});
