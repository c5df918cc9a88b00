/**
 * JSON Schema (draft 2020-12 subset understood by Ajv) of `evenlb sim --json` output. Tests
 * validate real output against it; docs/sim.md reproduces it.
 */

const num = { type: 'number' } as const;
const nullableNum = { type: ['number', 'null'] } as const;
const int = { type: 'integer', minimum: 0 } as const;

const spread = {
  type: ['object', 'null'],
  required: ['mean', 'stdev', 'min', 'max'],
  properties: { mean: num, stdev: num, min: num, max: num },
} as const;

const pod = {
  type: 'object',
  required: [
    'name',
    'address',
    'revision',
    'measured',
    'share',
    'overMean',
    'requests',
    'createdAtMs',
    'readyAtMs',
    'removedAtMs',
    'openConnections',
    'zone',
    'latencyMs',
    'utilization',
  ],
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    address: { type: 'string' },
    revision: int,
    measured: { type: 'boolean' },
    share: { type: 'number', minimum: 0, maximum: 1 },
    overMean: { type: 'number', minimum: 0 },
    requests: int,
    createdAtMs: num,
    readyAtMs: nullableNum,
    removedAtMs: nullableNum,
    openConnections: { type: ['integer', 'null'] },
    zone: { type: ['string', 'null'] },
    latencyMs: {
      type: ['object', 'null'],
      required: ['mean', 'p99'],
      properties: { mean: num, p99: num },
    },
    utilization: { type: ['number', 'null'], minimum: 0 },
  },
} as const;

const result = {
  type: 'object',
  required: [
    'dataplane',
    'description',
    'granularity',
    'policyKind',
    'maxOverMean',
    'cov',
    'jain',
    'maxOverMeanTrials',
    'utilizationMaxOverMean',
    'newPods',
    'newPodsFairShareMs',
    'latencyMs',
    'requests',
    'connectionsOpened',
    'probes',
    'reconnectsPerMinute',
    'newPodsOverFair',
    'crossZone',
    'zones',
    'events',
    'pods',
    'series',
  ],
  additionalProperties: false,
  properties: {
    dataplane: { type: 'string' },
    description: { type: 'string' },
    granularity: { enum: ['connection', 'pool', 'request'] },
    policyKind: { enum: ['load', 'hash', null] },
    maxOverMean: { type: 'number', minimum: 1 },
    cov: { type: 'number', minimum: 0 },
    jain: { type: 'number', minimum: 0, maximum: 1 },
    maxOverMeanTrials: spread,
    utilizationMaxOverMean: { type: 'number', minimum: 1 },
    newPods: int,
    newPodsFairShareMs: nullableNum,
    latencyMs: {
      type: ['object', 'null'],
      required: ['mean', 'p50', 'p99', 'p999', 'max'],
      properties: { mean: num, p50: num, p99: num, p999: num, max: num },
    },
    requests: {
      type: 'object',
      required: ['sent', 'failed', 'window', 'toRemovedPods'],
      properties: { sent: int, failed: int, window: int, toRemovedPods: int },
    },
    connectionsOpened: int,
    probes: {
      type: 'object',
      required: ['sent', 'perRequest'],
      additionalProperties: false,
      properties: { sent: int, perRequest: { type: 'number', minimum: 0 } },
    },
    reconnectsPerMinute: { type: ['number', 'null'], minimum: 0 },
    newPodsOverFair: {
      type: ['object', 'null'],
      required: ['bucketMs', 'overFair'],
      additionalProperties: false,
      properties: { bucketMs: num, overFair: { type: 'array', items: { type: 'number', minimum: 0 } } },
    },
    crossZone: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    zones: {
      type: ['array', 'null'],
      items: {
        type: 'object',
        required: ['zone', 'pods', 'share'],
        additionalProperties: false,
        properties: { zone: { type: 'string' }, pods: int, share: { type: 'number', minimum: 0, maximum: 1 } },
      },
    },
    events: int,
    pods: { type: 'array', items: pod },
    series: {
      type: ['object', 'null'],
      required: ['bucketMs', 'pods'],
      properties: {
        bucketMs: num,
        pods: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name', 'requests'],
            properties: { name: { type: 'string' }, requests: { type: 'array', items: num } },
          },
        },
      },
    },
  },
} as const;

/** The schema of `SimReport`. */
export const simReportSchema = {
  $id: 'https://evenlb.dev/schemas/sim-report.json',
  type: 'object',
  required: [
    'schemaVersion',
    'scenario',
    'description',
    'seed',
    'trials',
    'window',
    'settledAtMs',
    'changeAtMs',
    'settings',
    'results',
  ],
  additionalProperties: false,
  properties: {
    schemaVersion: { const: 1 },
    scenario: { type: 'string' },
    description: { type: 'string' },
    seed: int,
    trials: { type: 'integer', minimum: 1 },
    window: { type: 'object', required: ['fromMs', 'toMs'], properties: { fromMs: num, toMs: num } },
    settledAtMs: num,
    changeAtMs: nullableNum,
    settings: { type: 'object' },
    results: { type: 'array', minItems: 1, items: result },
  },
} as const;
