/**
 * One options parser for every component. A component declares its fields once as a spec
 * (type, bounds, default); `parseOptions` validates the caller's object against it, fills
 * defaults with `??` semantics (a valid 0 or "" is kept), rejects unknown keys and returns a
 * frozen, fully typed object. Errors name the component, the field, what was expected and
 * what was received.
 *
 * @example
 * const spec = { maxRequests: opt.int({ min: 1, optional: true }), policy: opt.string({ default: 'least-request' }) };
 * const o = parseOptions('BalancedAgent', { maxRequests: 10 }, spec);
 * // o.maxRequests === 10, o.policy === 'least-request'
 */
import { describeValue, ErrorCodes, EvenlbError } from './errors.js';

/** Parses one field. `path` is the field's dotted name, for messages. */
export interface FieldSpec<T> {
  readonly expected: string;
  parse(value: unknown, path: string, component: string): T;
}

/** Builds the error every option failure uses. */
export function optionError(component: string, path: string, expected: string, received: unknown): EvenlbError {
  return new EvenlbError(
    ErrorCodes.INVALID_OPTION,
    `${component}: option "${path}" must be ${expected}; received ${describeValue(received)}`,
    { details: { component, field: path, expected } },
  );
}

interface Common<T> {
  default?: T;
  optional?: boolean;
}

type Result<T, C extends Common<T>> = C extends { default: T } ? T : C extends { optional: true } ? T | undefined : T;

function field<T, C extends Common<T>>(
  expected: string,
  check: (v: unknown) => v is T,
  common: C,
  extra?: (v: T) => boolean,
): FieldSpec<Result<T, C>> {
  const full = common.optional || common.default !== undefined ? expected : `${expected} (required)`;
  return {
    expected: full,
    parse(value, path, component) {
      if (value === undefined) {
        if (common.default !== undefined) return common.default as Result<T, C>;
        if (common.optional) return undefined as Result<T, C>;
        throw optionError(component, path, full, value);
      }
      if (!check(value) || (extra !== undefined && !extra(value))) throw optionError(component, path, expected, value);
      return value as Result<T, C>;
    },
  };
}

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isInt = (v: unknown): v is number => Number.isInteger(v);
const isString = (v: unknown): v is string => typeof v === 'string';
const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';

function bounds(min?: number, max?: number): string {
  if (min !== undefined && max !== undefined) return ` between ${min} and ${max}`;
  if (min !== undefined) return ` >= ${min}`;
  if (max !== undefined) return ` <= ${max}`;
  return '';
}

/** Field builders. */
export const opt = {
  int<C extends Common<number> & { min?: number; max?: number }>(c: C = {} as C) {
    return field(
      `an integer${bounds(c.min, c.max)}`,
      isInt,
      c,
      (v) => (c.min === undefined || v >= c.min) && (c.max === undefined || v <= c.max),
    );
  },
  number<C extends Common<number> & { min?: number; max?: number; exclusiveMin?: boolean }>(c: C = {} as C) {
    const low = c.min === undefined ? '' : c.exclusiveMin ? ` > ${c.min}` : ` >= ${c.min}`;
    const high = c.max === undefined ? '' : ` <= ${c.max}`;
    return field(`a finite number${low}${high}`, isNumber, c, (v) => {
      if (c.min !== undefined && (c.exclusiveMin ? v <= c.min : v < c.min)) return false;
      return c.max === undefined || v <= c.max;
    });
  },
  boolean<C extends Common<boolean>>(c: C = {} as C) {
    return field('a boolean', isBoolean, c);
  },
  string<C extends Common<string> & { nonEmpty?: boolean }>(c: C = {} as C) {
    return field(c.nonEmpty ? 'a non-empty string' : 'a string', isString, c, (v) => !c.nonEmpty || v.length > 0);
  },
  oneOf<const V extends string, C extends Common<V>>(values: readonly V[], c: C = {} as C) {
    return field(
      `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`,
      (v): v is V => typeof v === 'string' && (values as readonly string[]).includes(v),
      c,
    );
  },
  /** A field with a custom check: `check` is a type guard; a value it rejects fails with `expected`. */
  custom<T, C extends Common<T>>(expected: string, check: (v: unknown) => v is T, c: C = {} as C) {
    return field(expected, check, c);
  },
  /** A nested object parsed with its own spec. */
  object<S extends Spec, C extends { optional?: boolean }>(
    spec: S,
    c: C = {} as C,
  ): FieldSpec<C extends { optional: true } ? Parsed<S> | undefined : Parsed<S>> {
    return {
      expected: 'an object',
      parse(value, path, component) {
        if (value === undefined && c.optional) return undefined as never;
        return parseOptionsAt(component, value ?? {}, spec, `${path}.`) as never;
      },
    };
  },
};

export type Spec = Record<string, FieldSpec<unknown>>;
export type Parsed<S extends Spec> = { readonly [K in keyof S]: S[K] extends FieldSpec<infer T> ? T : never };

function parseOptionsAt<S extends Spec>(component: string, input: unknown, spec: S, prefix: string): Parsed<S> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw optionError(component, prefix === '' ? '(options)' : prefix.slice(0, -1), 'an object', input);
  }
  const source = input as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    if (!Object.hasOwn(spec, key)) {
      const known = Object.keys(spec);
      const hint = known.length === 0 ? 'this component takes no options' : `known options are: ${known.join(', ')}`;
      throw new EvenlbError(ErrorCodes.INVALID_OPTION, `${component}: unknown option "${prefix}${key}"; ${hint}`, {
        details: { component, field: `${prefix}${key}` },
      });
    }
  }
  const out: Record<string, unknown> = {};
  for (const [key, f] of Object.entries(spec)) out[key] = f.parse(source[key], `${prefix}${key}`, component);
  return Object.freeze(out) as Parsed<S>;
}

/**
 * Validates `input` against `spec` for `component`; returns a frozen typed object.
 * `undefined` input means "all defaults".
 */
export function parseOptions<S extends Spec>(component: string, input: unknown, spec: S): Parsed<S> {
  return parseOptionsAt(component, input ?? {}, spec, '');
}
