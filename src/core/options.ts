/**
 * One options parser for every component. A component declares its fields once as a spec
 * (type, bounds, default); `parseOptions` validates the caller's object against it, fills
 * defaults with `??` semantics (a valid 0 or "" is kept), rejects unknown keys and returns a
 * frozen, fully typed object. Errors name the component, the field, what was expected and
 * what was received. The spec is the only declaration: `Input<S>` is the type callers pass
 * (the TSDoc of a spec entry documents the field), `Parsed<S>` the parsed one, and
 * `specSchema(S)` / `FieldSpec.schema` the JSON schema a configuration file is validated with.
 *
 * @example
 * const spec = { maxRequests: opt.int({ min: 1, optional: true }), policy: opt.string({ default: 'least-request' }) };
 * const o = parseOptions('BalancedAgent', { maxRequests: 10 }, spec);
 * // o.maxRequests === 10, o.policy === 'least-request'
 */
import { describeValue, ErrorCodes, EvenlbError } from './errors.js';

/**
 * A JSON schema (draft-07) fragment: the values a field accepts, as a configuration file's
 * schema says it (the proxy's config schema is built from these for the fields it shares).
 */
export type JsonSchema = { readonly [keyword: string]: unknown };

/**
 * Parses one field. `path` is the field's dotted name, for messages. `T` is the parsed type,
 * `I` what a caller may pass and `O` whether the caller may leave it out (it has a default or
 * is optional); `Input<S>` reads the last two, so a spec declares its input type too.
 */
export interface FieldSpec<T, I = T, O extends boolean = boolean> {
  readonly expected: string;
  /** True when the caller may leave the field out (it has a default or is optional). */
  readonly optional?: boolean;
  /** The values the field accepts as a JSON schema fragment; absent or `{}` when only `parse` can tell. */
  readonly schema?: JsonSchema;
  parse(value: unknown, path: string, component: string): T;
  /** Type-level only, never set at run time: the caller's type and optionality (read by `Input<S>`). */
  readonly '~input'?: { readonly value: I; readonly optional: O };
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
  /** Replaces the JSON schema fragment the builder would derive (for `custom` fields, say what `check` accepts). */
  schema?: JsonSchema;
}

type Result<T, C extends Common<T>> = C extends { default: T } ? T : C extends { optional: true } ? T | undefined : T;
/**
 * A custom field's input type: `I` when given, else the checked type. (An indexed access, so
 * a contextual type such as `Spec` cannot infer `I` as `unknown` through it.)
 */
type CustomInput<T, I> = { readonly checked: T; readonly given: I }[[I] extends [never] ? 'checked' : 'given'];
/** Whether a caller may leave the field out. */
type Omittable<C> = C extends { default: unknown } ? true : C extends { optional: true } ? true : false;

function field<T, C extends Common<T>>(
  expected: string,
  check: (v: unknown) => v is T,
  common: C,
  extra?: (v: T) => boolean,
  schema: JsonSchema = {},
): FieldSpec<Result<T, C>, T, Omittable<C>> {
  const optional = common.optional === true || common.default !== undefined;
  const full = optional ? expected : `${expected} (required)`;
  return {
    expected: full,
    optional,
    schema: common.schema ?? schema,
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

/** `minimum`/`maximum` keywords for the bounds that are set. */
function range(min: number | undefined, max: number | undefined, exclusiveMin = false): JsonSchema {
  return {
    ...(min === undefined ? {} : exclusiveMin ? { exclusiveMinimum: min } : { minimum: min }),
    ...(max === undefined ? {} : { maximum: max }),
  };
}

/** The JSON schema of an object with exactly `spec`'s fields (unknown keys rejected). */
export function specSchema(spec: Spec): JsonSchema {
  const required = Object.keys(spec).filter((k) => spec[k]?.optional !== true);
  return {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(Object.entries(spec).map(([k, f]) => [k, f.schema ?? {}])),
    ...(required.length === 0 ? {} : { required }),
  };
}

interface ObjectConfig {
  optional?: boolean;
  /** Also accept `false` (e.g. "switch this feature off"), kept as `false`. */
  orFalse?: boolean;
}

type ObjectResult<S extends Spec, C extends ObjectConfig> =
  | Parsed<S>
  | (C extends { orFalse: true } ? false : never)
  | (C extends { optional: true } ? undefined : never);

/** Field builders. */
export const opt = {
  int<C extends Common<number> & { min?: number; max?: number }>(c: C = {} as C) {
    return field(
      `an integer${bounds(c.min, c.max)}`,
      isInt,
      c,
      (v) => (c.min === undefined || v >= c.min) && (c.max === undefined || v <= c.max),
      { type: 'integer', ...range(c.min, c.max) },
    );
  },
  number<C extends Common<number> & { min?: number; max?: number; exclusiveMin?: boolean }>(c: C = {} as C) {
    const low = c.min === undefined ? '' : c.exclusiveMin ? ` > ${c.min}` : ` >= ${c.min}`;
    const high = c.max === undefined ? '' : ` <= ${c.max}`;
    return field(
      `a finite number${low}${high}`,
      isNumber,
      c,
      (v) => {
        if (c.min !== undefined && (c.exclusiveMin ? v <= c.min : v < c.min)) return false;
        return c.max === undefined || v <= c.max;
      },
      { type: 'number', ...range(c.min, c.max, c.exclusiveMin) },
    );
  },
  boolean<C extends Common<boolean>>(c: C = {} as C) {
    return field('a boolean', isBoolean, c, undefined, { type: 'boolean' });
  },
  string<C extends Common<string> & { nonEmpty?: boolean }>(c: C = {} as C) {
    return field(
      c.nonEmpty ? 'a non-empty string' : 'a string',
      isString,
      c,
      (v) => !c.nonEmpty || v.length > 0,
      c.nonEmpty ? { type: 'string', minLength: 1 } : { type: 'string' },
    );
  },
  oneOf<const V extends string, C extends Common<V>>(values: readonly V[], c: C = {} as C) {
    return field(
      `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`,
      (v): v is V => typeof v === 'string' && (values as readonly string[]).includes(v),
      c,
      undefined,
      { enum: [...values] },
    );
  },
  /**
   * A field with a custom check: `check` is a type guard; a value it rejects fails with
   * `expected`. `I` is what callers may pass when it is narrower than what `check` lets
   * through (the owner validates the rest); `c.schema` says what a config file may hold.
   */
  custom<T, C extends Common<T>, I = never>(
    expected: string,
    check: (v: unknown) => v is T,
    c: C = {} as C,
  ): FieldSpec<Result<T, C>, CustomInput<T, I>, Omittable<C>> {
    return field(expected, check, c) as FieldSpec<Result<T, C>, unknown, Omittable<C>> as FieldSpec<
      Result<T, C>,
      CustomInput<T, I>,
      Omittable<C>
    >;
  },
  /**
   * A nested object parsed with its own spec (errors name `outer.inner`); with `orFalse`, also
   * `false`. Left out, it is parsed from `{}` (every default) unless `optional`.
   */
  object<S extends Spec, C extends ObjectConfig = Record<never, never>>(
    spec: S,
    c: C = {} as C,
  ): FieldSpec<
    ObjectResult<S, C>,
    Input<S> | (C extends { orFalse: true } ? false : never),
    C extends { optional: true } ? true : Record<never, never> extends Input<S> ? true : false
  > {
    const object = specSchema(spec);
    const required = (object.required as readonly string[] | undefined) ?? [];
    return {
      expected: c.orFalse ? 'false or an object' : 'an object',
      optional: c.optional === true || required.length === 0,
      schema: c.orFalse ? { oneOf: [object, { const: false }] } : object,
      parse(value, path, component) {
        if (value === undefined && c.optional) return undefined as never;
        if (value === false && c.orFalse) return false as never;
        return parseOptionsAt(
          component,
          value ?? {},
          spec,
          `${path}.`,
          c.orFalse ? 'false or an object' : 'an object',
        ) as never;
      },
    };
  },
};

export type Spec = Record<string, FieldSpec<unknown>>;
/** The frozen object `parseOptions` returns for spec `S`: each field's parsed type, defaults filled. */
export type Parsed<S extends Spec> = {
  readonly [K in keyof S]: S[K] extends { parse(value: unknown, path: string, component: string): infer T } ? T : never;
};

/** The keys of `S` a caller may leave out. */
type OmittableKeys<S extends Spec> = {
  [K in keyof S]: S[K] extends { readonly '~input'?: { readonly optional: true } } ? K : never;
}[keyof S];
type InputOf<F> = F extends { readonly '~input'?: { readonly value: infer I } } ? I : never;
type Flatten<T> = { [K in keyof T]: T[K] };

/**
 * What a caller may pass for spec `S`: each field's input type, optional where the field has
 * a default or is optional. Derived from the spec, so a field added there is in the type too;
 * the TSDoc on a spec entry is the field's documentation.
 */
export type Input<S extends Spec> = Flatten<
  { [K in keyof S as K extends OmittableKeys<S> ? never : K]: InputOf<S[K]> } & {
    [K in keyof S as K extends OmittableKeys<S> ? K : never]?: InputOf<S[K]>;
  }
>;

function parseOptionsAt<S extends Spec>(
  component: string,
  input: unknown,
  spec: S,
  prefix: string,
  expected = 'an object',
): Parsed<S> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw optionError(component, prefix === '' ? '(options)' : prefix.slice(0, -1), expected, input);
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
