/**
 * A listener's connection limits (`recycle.maxRequestsPerConnection`, `recycle.maxConnectionAgeMs`
 * and a `tcp` listener's `maxConnectionAgeMs`) are the recycler's spec entries, not a copy: the
 * file accepts exactly the values `recycleConnections` accepts, the schema fragments are the
 * entries' own (and still the ones the file format has always had), and the TypeScript shape
 * is the spec's input type.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { parseRecyclerOptions, recyclerOptionsSpec } from '../../server/recycler-options.js';
import {
  type ListenerFairShare,
  type ListenerRecycle,
  listenerRecycleLimitsSpec,
  proxyConfigSchema,
} from './config-schema.js';
import { normalizeProxyConfig } from './proxy-config.js';

const CLUSTERS = [{ name: 'a', target: 'static:///127.0.0.1:1' }];

/** Where each limit sits in a listener, and the listener around it. */
const places = [
  {
    field: 'recycle.maxRequestsPerConnection',
    option: 'maxRequestsPerConnection',
    listener: (v: unknown) => ({ address: '127.0.0.1:0', recycle: { maxRequestsPerConnection: v } }),
  },
  {
    field: 'recycle.maxConnectionAgeMs',
    option: 'maxConnectionAgeMs',
    listener: (v: unknown) => ({ address: '127.0.0.1:0', recycle: { maxConnectionAgeMs: v } }),
  },
  {
    field: 'maxConnectionAgeMs',
    option: 'maxConnectionAgeMs',
    listener: (v: unknown) => ({ address: '127.0.0.1:0', protocol: 'tcp', cluster: 'a', maxConnectionAgeMs: v }),
  },
] as const;

const values: unknown[] = [1, 2, 100, 60_000, 0.5, 1.5, 0, -1, '5', true, null, [], {}];

function recyclerAccepts(option: string, value: unknown): boolean {
  try {
    parseRecyclerOptions({ [option]: value });
    return true;
  } catch {
    return false;
  }
}

describe('listener connection limits: the recycler spec entries', () => {
  for (const place of places) {
    it(`listeners[].${place.field} accepts exactly what recycleConnections accepts for ${place.option}`, () => {
      let rejected = 0;
      for (const value of values) {
        const load = () => normalizeProxyConfig({ listeners: [place.listener(value)], clusters: CLUSTERS });
        if (recyclerAccepts(place.option, value)) {
          expect(load, JSON.stringify(value)).not.toThrow();
        } else {
          rejected++;
          expect(load, JSON.stringify(value)).toThrow(
            expect.objectContaining({
              code: 'EVENLB_INVALID_CONFIG',
              message: expect.stringContaining(`"listeners[0].${place.field}"`),
            }),
          );
        }
      }
      // The table holds both kinds, so neither branch is vacuous.
      expect(rejected).toBeGreaterThan(0);
      expect(rejected).toBeLessThan(values.length);
    });
  }

  it('takes its schema fragments from the spec entries, unchanged from the file format', () => {
    const listener = proxyConfigSchema.properties.listeners.items.properties;
    const recycle = listener.recycle.properties as Record<string, unknown>;
    expect(recycle.maxRequestsPerConnection).toBe(recyclerOptionsSpec.maxRequestsPerConnection.schema);
    expect(recycle.maxConnectionAgeMs).toBe(recyclerOptionsSpec.maxConnectionAgeMs.schema);
    expect(listener.maxConnectionAgeMs).toBe(recyclerOptionsSpec.maxConnectionAgeMs.schema);
    // What the file format has always said for them.
    expect(recycle).toEqual({
      maxRequestsPerConnection: { type: 'integer', minimum: 1 },
      maxConnectionAgeMs: { type: 'number', exclusiveMinimum: 0 },
      fairShare: { type: 'object' },
    });
    expect(Object.keys(listenerRecycleLimitsSpec)).toEqual(['maxRequestsPerConnection', 'maxConnectionAgeMs']);
  });

  it('types recycle from the spec', () => {
    expectTypeOf<ListenerRecycle>().toEqualTypeOf<{
      readonly maxRequestsPerConnection?: number;
      readonly maxConnectionAgeMs?: number;
      readonly fairShare?: ListenerFairShare;
    }>();
  });
});
