/**
 * Field builders the scenario schema needs on top of the shared options parser: lists of
 * objects and discriminated unions (`type: ...`). They plug into `parseOptions` as ordinary
 * `FieldSpec`s, so every error still names the full dotted path (`events[1].maxSurge`), what
 * was expected and what was received.
 */
import { type FieldSpec, opt, optionError, type Parsed, type Spec } from '../../core/options.js';

/** A list whose items are parsed by `item`; `[]` when absent unless `required`. */
export function listOf<T>(
  item: FieldSpec<T>,
  c: { optional?: boolean; minLength?: number } = {},
): FieldSpec<readonly T[] | undefined> {
  const expected = `a list of ${item.expected}`;
  return {
    expected,
    parse(value, path, component) {
      if (value === undefined) {
        if (c.optional) return undefined;
        return Object.freeze([]);
      }
      if (!Array.isArray(value)) throw optionError(component, path, expected, value);
      if (c.minLength !== undefined && value.length < c.minLength) {
        throw optionError(component, path, `${expected} with at least ${c.minLength} item(s)`, value);
      }
      return Object.freeze(value.map((v, i) => item.parse(v, `${path}[${i}]`, component)));
    },
  };
}

/** Variants keyed by their `type` value; each spec must include its own `type` field. */
export type VariantSpecs = Record<string, Spec>;

/** The parsed union of `VariantSpecs`. */
export type VariantOf<V extends VariantSpecs> = { [K in keyof V]: Parsed<V[K]> }[keyof V];

/**
 * A discriminated union: the object's `type` selects which spec parses the rest.
 *
 * @example
 * const dist = variant({ fixed: { type: opt.oneOf(['fixed']), valueMs: opt.number() } });
 */
export function variant<V extends VariantSpecs, C extends { optional?: boolean; default?: unknown }>(
  specs: V,
  c: C = {} as C,
): FieldSpec<C extends { optional: true } ? VariantOf<V> | undefined : VariantOf<V>> {
  const types = Object.keys(specs);
  const expected = `an object with "type" one of ${types.map((t) => JSON.stringify(t)).join(', ')}`;
  return {
    expected,
    parse(value, path, component) {
      if (value === undefined) {
        if (c.default !== undefined) value = c.default;
        else if (c.optional) return undefined as never;
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw optionError(component, path, expected, value);
      }
      const type = (value as { type?: unknown }).type;
      const spec = typeof type === 'string' && Object.hasOwn(specs, type) ? specs[type] : undefined;
      if (spec === undefined) {
        throw optionError(component, `${path}.type`, `one of ${types.map((t) => JSON.stringify(t)).join(', ')}`, type);
      }
      return opt.object(spec).parse(value, path, component) as never;
    },
  };
}

/** A field that is either a number (with bounds) or one of some keywords. */
export function numberOrKeyword<const K extends string>(
  keywords: readonly K[],
  c: { min?: number; default: K | number },
): FieldSpec<K | number> {
  const expected = `a number${c.min === undefined ? '' : ` >= ${c.min}`} or one of ${keywords.map((k) => JSON.stringify(k)).join(', ')}`;
  return {
    expected,
    parse(value, path, component) {
      if (value === undefined) return c.default;
      if (typeof value === 'string' && (keywords as readonly string[]).includes(value)) return value as K;
      if (typeof value === 'number' && Number.isFinite(value) && (c.min === undefined || value >= c.min)) return value;
      throw optionError(component, path, expected, value);
    },
  };
}

/** A Deployment's maxSurge / maxUnavailable: a non-negative integer or a percentage string "25%". */
export function intOrPercent(c: { default: number | string }): FieldSpec<number | string> {
  const expected = 'an integer >= 0 or a percentage like "25%"';
  return {
    expected,
    parse(value, path, component) {
      if (value === undefined) return c.default;
      if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
      if (typeof value === 'string' && /^\d+(\.\d+)?%$/.test(value)) return value;
      throw optionError(component, path, expected, value);
    },
  };
}
