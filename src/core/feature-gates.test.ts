import { describe, expect, it } from 'vitest';
import { ErrorCodes } from './errors.js';
import { FeatureGates, knownFeatureGates } from './feature-gates.js';

describe('FeatureGates', () => {
  it('has RoundTripLoadBalancing as a Beta gate, on by default', () => {
    expect(knownFeatureGates.RoundTripLoadBalancing).toMatchObject({ stage: 'Beta', default: true });
    expect(FeatureGates.parse(undefined).enabled('RoundTripLoadBalancing')).toBe(true);
    expect(FeatureGates.parse('').enabled('RoundTripLoadBalancing')).toBe(true);
    expect(FeatureGates.parse({}).toString()).toBe('RoundTripLoadBalancing=true');
  });

  const valid: { input: string | Record<string, unknown>; value: boolean }[] = [
    { input: 'RoundTripLoadBalancing=false', value: false },
    { input: 'RoundTripLoadBalancing=true', value: true },
    { input: ' RoundTripLoadBalancing = FALSE ', value: false },
    { input: 'RoundTripLoadBalancing=False,', value: false },
    { input: 'RoundTripLoadBalancing=false,RoundTripLoadBalancing=true', value: true },
    { input: { RoundTripLoadBalancing: false }, value: false },
    { input: { RoundTripLoadBalancing: true }, value: true },
  ];
  it.each(valid)('parses $input', ({ input, value }) => {
    const gates = FeatureGates.parse(input);
    expect(gates.enabled('RoundTripLoadBalancing')).toBe(value);
    expect(gates.toObject()).toEqual({ RoundTripLoadBalancing: value });
    expect(FeatureGates.parse(gates)).toBe(gates);
  });

  const invalid: { input: unknown; message: string }[] = [
    { input: 'NoSuchGate=true', message: 'unknown feature gate "NoSuchGate"; known gates: RoundTripLoadBalancing' },
    { input: { NoSuchGate: true }, message: 'unknown feature gate "NoSuchGate"' },
    { input: 'roundtriploadbalancing=true', message: 'unknown feature gate "roundtriploadbalancing"' },
    { input: '=true', message: 'unknown feature gate ""' },
    {
      input: 'RoundTripLoadBalancing',
      message: 'feature gate "RoundTripLoadBalancing" must be of the form Name=true|false',
    },
    {
      input: 'RoundTripLoadBalancing=yes',
      message: 'feature gate RoundTripLoadBalancing must be true or false; received "yes"',
    },
    { input: 'RoundTripLoadBalancing=', message: 'must be true or false; received ""' },
    { input: { RoundTripLoadBalancing: 'false' }, message: 'must be true or false; received "false"' },
    { input: { RoundTripLoadBalancing: 1 }, message: 'must be true or false; received 1' },
    { input: { RoundTripLoadBalancing: null }, message: 'must be true or false; received null' },
    { input: 42, message: 'feature gates must be a string "Name=true,..." or an object; received 42' },
    { input: ['RoundTripLoadBalancing=true'], message: 'received an array of 1' },
    { input: null, message: 'received null' },
  ];
  it.each(invalid)('rejects $input', ({ input, message }) => {
    expect(() => FeatureGates.parse(input as never)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_FEATURE_GATE, message: expect.stringContaining(message) }),
    );
  });
});
