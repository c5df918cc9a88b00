import { Ajv } from 'ajv';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ErrorCodes } from './errors.js';
import { type Input, opt, optionError, type Parsed, parseOptions, specSchema } from './options.js';

const spec = {
  maxRequests: opt.int({ min: 1, optional: true }),
  retries: opt.int({ min: 0, max: 10, default: 3 }),
  ratio: opt.number({ min: 0, max: 1, default: 0.5 }),
  timeoutMs: opt.number({ min: 0, exclusiveMin: true, default: 1000 }),
  name: opt.string({ default: 'evenlb' }),
  label: opt.string({ nonEmpty: true, optional: true }),
  enabled: opt.boolean({ default: true }),
  mode: opt.oneOf(['fast', 'safe'] as const, { default: 'safe' }),
  required: opt.string(),
  nested: opt.object({ depth: opt.int({ min: 0, default: 1 }) }),
  maybe: opt.object({ depth: opt.int({ default: 2 }) }, { optional: true }),
  even: opt.custom('an even integer', (v): v is number => Number.isInteger(v) && (v as number) % 2 === 0, {
    optional: true,
  }),
};

describe('parseOptions', () => {
  it('fills every default and returns a frozen object', () => {
    const o = parseOptions('Thing', { required: 'x' }, spec);
    expect(o).toEqual({
      maxRequests: undefined,
      retries: 3,
      ratio: 0.5,
      timeoutMs: 1000,
      name: 'evenlb',
      label: undefined,
      enabled: true,
      mode: 'safe',
      required: 'x',
      nested: { depth: 1 },
      maybe: undefined,
      even: undefined,
    });
    expect(Object.isFrozen(o)).toBe(true);
    expect(Object.isFrozen(o.nested)).toBe(true);
  });

  it('keeps valid zero, empty and false values instead of the defaults (?? not ||)', () => {
    const o = parseOptions('Thing', { required: '', retries: 0, ratio: 0, name: '', enabled: false }, spec);
    expect(o).toMatchObject({ required: '', retries: 0, ratio: 0, name: '', enabled: false });
  });

  it('treats undefined and null input as "all defaults"', () => {
    const small = { retries: opt.int({ default: 3 }) };
    expect(parseOptions('Thing', undefined, small)).toEqual({ retries: 3 });
    expect(parseOptions('Thing', null, small)).toEqual({ retries: 3 });
  });

  it('parses nested objects with dotted names in errors', () => {
    expect(parseOptions('Thing', { required: 'x', nested: { depth: 4 }, maybe: {} }, spec)).toMatchObject({
      nested: { depth: 4 },
      maybe: { depth: 2 },
    });
    expect(() => parseOptions('Thing', { required: 'x', nested: { depth: -1 } }, spec)).toThrow(
      'Thing: option "nested.depth" must be an integer >= 0; received -1',
    );
    expect(() => parseOptions('Thing', { required: 'x', nested: { deep: 1 } }, spec)).toThrow(
      'Thing: unknown option "nested.deep"; known options are: depth',
    );
    expect(() => parseOptions('Thing', { required: 'x', nested: 5 }, spec)).toThrow(
      'Thing: option "nested" must be an object; received 5',
    );
  });

  const invalid: { input: Record<string, unknown>; message: string }[] = [
    {
      input: { required: undefined },
      message: 'Thing: option "required" must be a string (required); received undefined',
    },
    { input: { maxRequests: 0 }, message: 'option "maxRequests" must be an integer >= 1; received 0' },
    { input: { maxRequests: 1.5 }, message: 'option "maxRequests" must be an integer >= 1; received 1.5' },
    { input: { retries: 11 }, message: 'option "retries" must be an integer between 0 and 10; received 11' },
    { input: { ratio: 2 }, message: 'option "ratio" must be a finite number >= 0 <= 1; received 2' },
    { input: { ratio: Number.NaN }, message: 'option "ratio" must be a finite number >= 0 <= 1; received NaN' },
    { input: { timeoutMs: 0 }, message: 'option "timeoutMs" must be a finite number > 0; received 0' },
    { input: { timeoutMs: '100' }, message: 'option "timeoutMs" must be a finite number > 0; received "100"' },
    { input: { name: 5 }, message: 'option "name" must be a string; received 5' },
    { input: { label: '' }, message: 'option "label" must be a non-empty string; received ""' },
    { input: { enabled: 'true' }, message: 'option "enabled" must be a boolean; received "true"' },
    { input: { mode: 'turbo' }, message: 'option "mode" must be one of "fast", "safe"; received "turbo"' },
    { input: { even: 3 }, message: 'option "even" must be an even integer; received 3' },
    { input: { retries: null }, message: 'option "retries" must be an integer between 0 and 10; received null' },
    {
      input: { retrys: 2 },
      message:
        'Thing: unknown option "retrys"; known options are: maxRequests, retries, ratio, timeoutMs, name, label, enabled, mode, required, nested, maybe, even',
    },
  ];
  it.each(invalid)('rejects $input, naming field, expectation and value', ({ input, message }) => {
    expect(() => parseOptions('Thing', { required: 'x', ...input }, spec)).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_OPTION, message: expect.stringContaining(message) }),
    );
  });

  it('rejects a non-object input', () => {
    for (const input of [5, 'x', [1], true]) {
      expect(() => parseOptions('Thing', input, spec)).toThrow(/Thing: option "\(options\)" must be an object/);
    }
  });

  it('says so when a component takes no options at all', () => {
    expect(() => parseOptions('round-robin policy', { weighted: true }, {})).toThrow(
      'round-robin policy: unknown option "weighted"; this component takes no options',
    );
  });

  it('carries the field and expectation in the error details', () => {
    const err = optionError('Thing', 'a.b', 'a number', 'x');
    expect(err.details).toEqual({ component: 'Thing', field: 'a.b', expected: 'a number' });
    expect(err.code).toBe(ErrorCodes.INVALID_OPTION);
  });
});

describe("Input<S>: the caller's type, derived from the spec", () => {
  it('makes fields with a default or optional: true optional, the rest required', () => {
    type I = Input<typeof spec>;
    expectTypeOf<I>().toEqualTypeOf<{
      required: string;
      maxRequests?: number;
      retries?: number;
      ratio?: number;
      timeoutMs?: number;
      name?: string;
      label?: string;
      enabled?: boolean;
      mode?: 'fast' | 'safe';
      nested?: { depth?: number };
      maybe?: { depth?: number };
      even?: number;
    }>();
    // The parsed type is unchanged: defaults filled, optional fields possibly undefined.
    expectTypeOf<Parsed<typeof spec>['retries']>().toEqualTypeOf<number>();
    expectTypeOf<Parsed<typeof spec>['maxRequests']>().toEqualTypeOf<number | undefined>();
  });

  it('takes a narrower input type for a custom field, and false for an object with orFalse', () => {
    const s = {
      gates: opt.custom<string | Record<string, unknown>, { optional: true }, string | Record<string, boolean>>(
        'gates',
        (v): v is string | Record<string, unknown> => typeof v === 'string' || typeof v === 'object',
        { optional: true },
      ),
      guard: opt.object({ share: opt.number({ min: 1, default: 1.5 }) }, { optional: true, orFalse: true }),
    };
    expectTypeOf<Input<typeof s>>().toEqualTypeOf<{
      gates?: string | Record<string, boolean>;
      guard?: { share?: number } | false;
    }>();
    expect(parseOptions('Thing', { guard: false }, s).guard).toBe(false);
    expect(parseOptions('Thing', { guard: {} }, s).guard).toEqual({ share: 1.5 });
    expect(parseOptions('Thing', {}, s).guard).toBeUndefined();
    expect(() => parseOptions('Thing', { guard: true }, s)).toThrow(
      'Thing: option "guard" must be false or an object; received true',
    );
    expect(() => parseOptions('Thing', { guard: { share: 0 } }, s)).toThrow('option "guard.share" must be');
  });
});

describe('specSchema: the JSON schema of a spec, for configuration files', () => {
  const ajv = new Ajv({ strict: true, allowUnionTypes: true });
  const schemaSpec = {
    count: opt.int({ min: 1, max: 10, optional: true }),
    ratio: opt.number({ min: 0, exclusiveMin: true, max: 1, optional: true }),
    floor: opt.number({ min: 0, default: 0 }),
    on: opt.boolean({ default: true }),
    label: opt.string({ nonEmpty: true, optional: true }),
    mode: opt.oneOf(['a', 'b'] as const, { default: 'a' }),
    name: opt.string(),
    guard: opt.object({ share: opt.number({ min: 1, default: 1.5 }) }, { optional: true, orFalse: true }),
  };
  const validate = ajv.compile(specSchema(schemaSpec));
  const parses = (input: Record<string, unknown>): boolean => {
    try {
      parseOptions('Thing', input, schemaSpec);
      return true;
    } catch {
      return false;
    }
  };

  it('lists required fields and rejects unknown keys', () => {
    expect(specSchema(schemaSpec)).toMatchObject({ type: 'object', additionalProperties: false, required: ['name'] });
  });

  const cases: Record<string, unknown>[] = [
    {},
    { count: 1 },
    { count: 0 },
    { count: 10 },
    { count: 11 },
    { count: 1.5 },
    { ratio: 0 },
    { ratio: 0.5 },
    { ratio: 1 },
    { ratio: 1.01 },
    { floor: 0 },
    { floor: -1 },
    { on: false },
    { on: 'yes' },
    { label: '' },
    { label: 'x' },
    { mode: 'b' },
    { mode: 'c' },
    { guard: false },
    { guard: true },
    { guard: {} },
    { guard: { share: 0.5 } },
    { guard: { share: 2, other: 1 } },
    { extra: 1 },
  ];
  it.each(cases)('accepts exactly what the parser accepts: %o', (fields) => {
    const input = { name: 'n', ...fields };
    expect(validate(input)).toBe(parses(input));
  });

  it('rejects a missing required field like the parser', () => {
    expect(validate({})).toBe(false);
    expect(parses({})).toBe(false);
  });
});
