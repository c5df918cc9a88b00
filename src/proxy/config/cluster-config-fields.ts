/**
 * The one table between a proxy cluster (`clusters[]` in the config file) and the `Cluster`
 * options it shares. Each entry names a `clusterOptionsSpec` field, where the proxy file holds
 * it (a dotted path: `retries.idempotent` is `retryIdempotent`), the proxy's default when it
 * differs from the cluster's, and — only when the file says it differently — its own JSON
 * schema or how its value becomes the option (a CA file path → the PEM). Everything else comes
 * from the spec: the file's schema for the field (`FieldSpec.schema`), its check, its type.
 *
 * Cluster options a proxy file cannot set are listed, with the reason, in
 * `CLIENT_ONLY_CLUSTER_OPTIONS`; a test fails when a spec field is in neither. Proxy-only
 * fields (`protocol`, `hostRewrite`) are declared in `config-schema.ts`.
 */
import { readFileSync } from 'node:fs';
import {
  type ClusterOptions,
  clusterOptionsSpec,
  clusterTlsSpec,
  type ParsedClusterOptions,
  parseClusterOptions,
} from '../../cluster/cluster-options.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import type { JsonSchema, Spec } from '../../core/options.js';

/** How the proxy file holds one cluster option. */
export interface ProxyField {
  /** Dotted path in a `clusters[]` entry. */
  readonly path: string;
  /** The proxy's default, written into the normalized `ClusterConfig`; unset = the spec's default (if any). */
  readonly default?: unknown;
  /** The file's schema when it is stricter than, or spelled unlike, the spec's. */
  readonly schema?: JsonSchema;
  /** The option value for a file value (file paths are read here, when the cluster is built). */
  readonly toOption?: (value: unknown, read: FileReader) => unknown;
  /** A nested option object (`tls`): its own fields, table and spec. */
  readonly nested?: { readonly spec: Spec; readonly fields: ProxyFieldTable; readonly clientOnly: ClientOnly };
}

export type ProxyFieldTable = { readonly [option: string]: ProxyField };
type ClientOnly = { readonly [option: string]: string };

/** Reads a file named in the config (PEM); validation passes the path through unread. */
export type FileReader = (path: string) => string | Buffer;

const NAME = '^[a-zA-Z0-9][-a-zA-Z0-9_.]{0,62}$';

/** `tls` of a proxy cluster: `ca` is a PEM file path; client certificates are not offered. */
const tlsFields = {
  ca: {
    path: 'ca',
    schema: { type: 'string', minLength: 1 },
    toOption: (value, read) => read(value as string),
  },
  servername: { path: 'servername' },
  rejectUnauthorized: { path: 'rejectUnauthorized' },
} as const satisfies ProxyFieldTable;

const tlsClientOnly = {
  cert: 'upstream client certificates (mutual TLS) are not offered by the proxy',
  key: 'upstream client certificates (mutual TLS) are not offered by the proxy',
} as const;

/** Every cluster option a proxy file can set, keyed by its `clusterOptionsSpec` name. */
export const proxyClusterFields = {
  name: { path: 'name', schema: { type: 'string', pattern: NAME } },
  target: { path: 'target', schema: { type: 'string', pattern: '^(static|dns|k8s|file):///.+' } },
  policy: { path: 'policy' },
  policyOptions: { path: 'policyOptions', schema: { type: 'object' } },
  maxRequestsPerConnection: { path: 'lifetime.maxRequestsPerConnection' },
  maxConnectionAgeMs: { path: 'lifetime.maxConnectionAgeMs' },
  idleTimeoutMs: { path: 'lifetime.idleTimeoutMs' },
  connectionsPerEndpoint: { path: 'connectionsPerEndpoint' },
  connectTimeoutMs: { path: 'connectTimeoutMs', default: 5_000 },
  /** Time to the upstream's response head; 0 = none. */
  headersTimeoutMs: { path: 'requestTimeoutMs', default: 300_000 },
  bodyTimeoutMs: { path: 'bodyTimeoutMs', default: 300_000 },
  retryConnectFailures: { path: 'retries.connectFailures', default: 2 },
  retryIdempotent: { path: 'retries.idempotent', default: 1 },
  retryOn: { path: 'retries.on' },
  outlierDetection: { path: 'outlierDetection' },
  slowStartMs: { path: 'slowStartMs' },
  slowStartAggression: { path: 'slowStartAggression' },
  slowStartMinWeightPercent: { path: 'slowStartMinWeightPercent' },
  herdingGuard: { path: 'herdingGuard' },
  zoneRouting: { path: 'zoneRouting' },
  pushback: { path: 'pushback' },
  loadProbes: { path: 'loadProbes' },
  tls: { path: 'tls', nested: { spec: clusterTlsSpec, fields: tlsFields, clientOnly: tlsClientOnly } },
} as const satisfies { readonly [K in keyof typeof clusterOptionsSpec]?: ProxyField };

type Fields = typeof proxyClusterFields;

/** Shared options a `clusters[]` entry spells as the spec does: same name, top level, nothing the table adds. */
export type SameNameOption = {
  [K in keyof Fields]: Fields[K] extends { readonly path: K }
    ? Exclude<keyof Fields[K], 'path'> extends never
      ? K
      : never
    : never;
}[keyof Fields];

/** Options the spec always fills (a default, or required). */
type FilledOption = {
  [K in keyof ParsedClusterOptions]: undefined extends ParsedClusterOptions[K] ? never : K;
}[keyof ParsedClusterOptions];

/**
 * The same-name options as the normalized `ClusterConfig` holds them: the spec's input type
 * (the file's value, kept as written), required where the spec fills a default. A field added
 * to the spec and to the table with its own name is in `ClusterConfig` at once.
 */
export type SameNameClusterConfig = Readonly<Pick<ClusterOptions, Exclude<SameNameOption, FilledOption>>> &
  Readonly<Required<Pick<ClusterOptions, SameNameOption & FilledOption>>>;

/** Cluster options a proxy file cannot set, and why. */
export const CLIENT_ONLY_CLUSTER_OPTIONS = {
  authority: 'the proxy forwards the client Host header, or `hostRewrite`',
  ageJitter: 'the proxy uses the default jitter',
  allowH2: 'the proxy picks the upstream protocol with `protocol: h2`',
  h2c: 'the proxy picks the upstream protocol with `protocol: h2`',
  maxConcurrentStreams: 'HTTP/2 upstream sessions are the proxy own pool (`protocol: h2`)',
  discoveryTimeoutMs: 'the proxy answers 503 while discovery is pending instead of waiting',
  statsWindowMs: 'the proxy sets one window for all clusters (`imbalanceWindowMs`)',
  featureGates: 'the proxy always balances per request',
  clock: 'a programmatic object (ProxyServer options)',
  random: 'a programmatic object (ProxyServer options)',
  sourceOptions: 'discovery tuning is not part of the proxy file',
  observer: 'the proxy installs its own metrics observer',
} as const satisfies { readonly [K in keyof typeof clusterOptionsSpec]?: string };

/** Reads a file for real, when a `ProxyCluster` is built. */
export const readConfigFile: FileReader = (path) => readFileSync(path);

/** The value at dotted `path` in `obj`, or undefined. */
export function valueAtPath(obj: unknown, path: string): unknown {
  let v = obj;
  for (const p of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

function setAtPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let o = obj;
  for (const p of parts.slice(0, -1)) {
    const next = o[p];
    if (next === null || typeof next !== 'object') o[p] = {};
    o = o[p] as Record<string, unknown>;
  }
  o[parts[parts.length - 1] as string] = value;
}

/** The spec's default for a field, or undefined when it has none. */
function specDefault(spec: Spec, option: string): unknown {
  const f = spec[option];
  if (f === undefined || f.optional !== true) return undefined;
  return f.parse(undefined, option, 'proxy config');
}

function schemaOf(table: ProxyFieldTable, spec: Spec): JsonSchema {
  const root: { properties: Record<string, JsonSchema>; required: string[] } = { properties: {}, required: [] };
  for (const [option, f] of Object.entries(table)) {
    const specField = spec[option];
    const schema =
      f.nested !== undefined ? schemaOf(f.nested.fields, f.nested.spec) : (f.schema ?? specField?.schema ?? {});
    const parts = f.path.split('.');
    let at = root;
    for (const p of parts.slice(0, -1)) {
      at.properties[p] ??= { type: 'object', additionalProperties: false, properties: {} };
      at = at.properties[p] as typeof root;
    }
    const last = parts[parts.length - 1] as string;
    at.properties[last] = schema;
    if (parts.length === 1 && specField?.optional !== true && f.default === undefined) root.required.push(last);
  }
  return {
    type: 'object',
    additionalProperties: false,
    properties: root.properties,
    ...(root.required.length === 0 ? {} : { required: root.required }),
  };
}

/**
 * The JSON schema of the shared fields of a `clusters[]` entry, built from the cluster spec
 * (and the table's overrides); `config-schema.ts` adds the proxy-only fields.
 */
export function sharedClusterSchema(): JsonSchema {
  return schemaOf(proxyClusterFields, clusterOptionsSpec);
}

function fillDefaults(out: Record<string, unknown>, table: ProxyFieldTable, spec: Spec): void {
  for (const [option, f] of Object.entries(table)) {
    const value = valueAtPath(out, f.path);
    if (value === undefined) {
      const d = f.default ?? (f.nested === undefined ? specDefault(spec, option) : undefined);
      if (d !== undefined) setAtPath(out, f.path, d);
    } else if (f.nested !== undefined && value !== null && typeof value === 'object') {
      const copy = { ...(value as Record<string, unknown>) };
      fillDefaults(copy, f.nested.fields, f.nested.spec);
      setAtPath(out, f.path, copy);
    }
  }
}

/**
 * A `clusters[]` entry with the shared fields' defaults filled in (the proxy's, else the
 * spec's), deeply copied; proxy-only fields are left to the caller.
 */
export function withClusterDefaults(entry: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out = structuredClone(entry) as Record<string, unknown>;
  fillDefaults(out, proxyClusterFields, clusterOptionsSpec);
  out.retryBufferBytes ??= DEFAULT_RETRY_BUFFER_BYTES;
  return out;
}

/** `retryBufferBytes` when the file does not say: a withheld retryable response is buffered up to 64 KiB. */
const DEFAULT_RETRY_BUFFER_BYTES = 64 * 1024;

function toOptions(config: unknown, table: ProxyFieldTable, read: FileReader): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [option, f] of Object.entries(table)) {
    const value = valueAtPath(config, f.path);
    if (value === undefined) continue;
    if (f.nested !== undefined && value !== false) out[option] = toOptions(value, f.nested.fields, read);
    else out[option] = f.toOption === undefined ? value : f.toOption(value, read);
  }
  return out;
}

/**
 * The `Cluster` options a normalized proxy cluster config gives, through the table: every
 * shared field the file set, at its option name. `read` loads named files (the real reader
 * when building a cluster; at validation a pass-through).
 */
export function clusterOptionsOf(config: unknown, read: FileReader = readConfigFile): Record<string, unknown> {
  return toOptions(config, proxyClusterFields, read);
}

/**
 * The proxy file path of a cluster option path (`retryIdempotent` → `retries.idempotent`,
 * `herdingGuard.minResponses` → `herdingGuard.minResponses`), for error messages.
 */
export function proxyPathOf(optionPath: string, table: ProxyFieldTable = proxyClusterFields): string {
  const [head = '', ...rest] = optionPath.split('.');
  const f = table[head];
  if (f === undefined) return optionPath;
  if (rest.length === 0) return f.path;
  const tail = f.nested === undefined ? rest.join('.') : proxyPathOf(rest.join('.'), f.nested.fields);
  return `${f.path}.${tail}`;
}

/**
 * Checks a normalized `clusters[]` entry with the cluster spec itself — what `new Cluster`
 * would reject — naming the field as the file spells it: `"clusters[0].retries.idempotent"
 * must be an integer between 0 and 10; received 11`. The file's schema comes from the same
 * spec, so this catches what a schema cannot say (custom checks). Files are not read here.
 */
export function checkClusterConfig(at: string, config: unknown): void {
  try {
    parseClusterOptions(clusterOptionsOf(config, (path) => path));
  } catch (err) {
    const option = err instanceof EvenlbError ? (err.details as { field?: unknown } | undefined)?.field : undefined;
    if (!(err instanceof EvenlbError) || typeof option !== 'string') throw err;
    const field = `${at}.${proxyPathOf(option)}`;
    // The option error reads `<component>: option "<path>" must be ...; received ...` or
    // `<component>: unknown option "<path>"; known options are: ...`: keep what follows the path.
    const after = err.message.slice(err.message.indexOf(`"${option}"`) + option.length + 2).trim();
    const message = err.message.includes('unknown option')
      ? `is not a known field (${after.replace(/^;\s*/, '')})`
      : after;
    throw new EvenlbError(ErrorCodes.INVALID_CONFIG, `proxy config: "${field}" ${message}`, { details: { field } });
  }
}
