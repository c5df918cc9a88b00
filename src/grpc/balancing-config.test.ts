/**
 * `GrpcBalancingConfigInput` is derived from `grpcBalancingSpec`, not written beside it. The
 * type test pins what callers may pass, field by field: a spec entry added, removed, loosened
 * or made required changes the derived type and fails here (under `tsc --noEmit`), so the
 * change is seen in review. The run-time half checks that every field the type offers is one
 * the parser takes.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { type GrpcBalancingConfigInput, grpcBalancingSpec, parseGrpcBalancingConfig } from './balancing-config.js';

describe('GrpcBalancingConfigInput', () => {
  it('is the input type of the spec, with the nested option shapes of the specs it reuses', () => {
    expectTypeOf<GrpcBalancingConfigInput>().toEqualTypeOf<{
      policy?: string;
      policyOptions?: unknown;
      outlierDetection?:
        | { consecutiveFailures?: number; baseEjectionMs?: number; maxEjectionMs?: number; maxEjectionPercent?: number }
        | false;
      hashHeader?: string;
      failureCodes?: readonly number[];
      slowStartMs?: number;
      slowStartAggression?: number;
      slowStartMinWeightPercent?: number;
      herdingGuard?: { maxShareMultiple?: number; minResponses?: number; seedLatency?: boolean } | false;
      zoneRouting?: {
        zone?: string;
        mode?: 'auto' | 'on' | 'off';
        loadBand?: number;
        probePercent?: number;
        maxSpillPercent?: number;
      };
      pushback?: { windowMs?: number; factor?: number } | false;
      loadProbes?:
        | {
            port?: number;
            path?: string;
            timeoutMs?: number;
            maxConcurrent?: number;
            maxQueued?: number;
            tls?: boolean;
          }
        | false;
      statsWindowMs?: number;
      name?: string;
    }>();
    // Its keys are exactly the spec's.
    expectTypeOf<keyof GrpcBalancingConfigInput>().toEqualTypeOf<keyof typeof grpcBalancingSpec>();
  });

  it('rejects nested shapes the type rejects', () => {
    // @ts-expect-error an unknown herding guard field
    const guard: GrpcBalancingConfigInput = { herdingGuard: { maxShare: 2 } };
    expect(() => parseGrpcBalancingConfig(guard)).toThrow(/unknown option "herdingGuard.maxShare"/);
    // @ts-expect-error a zone routing mode that does not exist
    const zone: GrpcBalancingConfigInput = { zoneRouting: { mode: 'always' } };
    expect(() => parseGrpcBalancingConfig(zone)).toThrow(/"zoneRouting.mode" must be one of "auto", "on", "off"/);
    // @ts-expect-error an outlier detection field of the wrong type
    const outlier: GrpcBalancingConfigInput = { outlierDetection: { consecutiveFailures: '3' } };
    expect(() => parseGrpcBalancingConfig(outlier)).toThrow(/"consecutiveFailures" must be an integer >= 1/);
  });

  it('accepts every field the type offers, each at a valid value', () => {
    const all: Required<GrpcBalancingConfigInput> = {
      policy: 'round-robin',
      policyOptions: {},
      outlierDetection: { consecutiveFailures: 3 },
      hashHeader: 'x-user',
      failureCodes: [14],
      slowStartMs: 1_000,
      slowStartAggression: 1,
      slowStartMinWeightPercent: 10,
      herdingGuard: false,
      zoneRouting: { mode: 'off' },
      pushback: { windowMs: 2_000 },
      loadProbes: { port: 9090 },
      statsWindowMs: 1_000,
      name: 'echo',
    };
    expect(Object.keys(all).sort()).toEqual(Object.keys(grpcBalancingSpec).sort());
    expect(parseGrpcBalancingConfig(all)).toMatchObject({ policy: 'round-robin', name: 'echo', herdingGuard: false });
  });
});
