/**
 * The balance-versus-reconnects curve of server-side recycling for one scenario: the same
 * scenario run with age-based recycling at a ladder of ages and with fair-share shedding at a
 * few tolerances, through one per-connection dataplane, each point giving max/mean and
 * reconnects per minute. It is what `docs/sim.md` tabulates and the HTML report draws (`evenlb
 * sim --html FILE --recycling-curve`). The caller runs the scenario (it knows how it was built);
 * this module only chooses the settings and collects the figures, so the curve uses exactly the
 * scenario, seed and dataplane of the report it belongs to.
 */
import type { SimReport } from './sim-report.js';

/** Ages of the `--server-max-age` ladder, ms (docs/sim.md's table). */
export const CURVE_AGES_MS: readonly number[] = [60_000, 30_000, 20_000, 10_000, 5_000, 2_000, 1_000];
/** Tolerances of `--server-fair-share`. */
export const CURVE_TOLERANCES: readonly number[] = [0.05, 0.1, 0.2, 0.3];

/** The recycling knobs one point of the curve sets (scenario knobs of the same names). */
export interface RecyclingKnobs {
  readonly serverMaxConnectionAgeMs?: number;
  readonly serverFairShareTolerance?: number;
}

export interface RecyclingCurvePoint {
  readonly recycling: 'age' | 'fair-share';
  /** The age (ms) or the tolerance. */
  readonly setting: number;
  readonly maxOverMean: number;
  readonly reconnectsPerMinute: number;
}

export interface RecyclingCurve {
  readonly dataplane: string;
  /** The scenario without any recycling, for reference. */
  readonly none: { readonly maxOverMean: number; readonly reconnectsPerMinute: number };
  /** Age points (longest age first), then fair-share points (smallest tolerance first). */
  readonly points: readonly RecyclingCurvePoint[];
}

/**
 * Runs the curve: `run(knobs)` must run the report's scenario (same seed) with the given
 * recycling knobs added; `dataplane` must be a per-connection dataplane in its results.
 *
 * @example
 * const curve = recyclingCurve((k) => runBuiltin('steady', ['iptables'], k), 'iptables');
 */
export function recyclingCurve(
  run: (knobs: RecyclingKnobs) => SimReport,
  dataplane: string,
  settings: { readonly agesMs?: readonly number[]; readonly tolerances?: readonly number[] } = {},
): RecyclingCurve {
  const figures = (knobs: RecyclingKnobs): { maxOverMean: number; reconnectsPerMinute: number } => {
    const result = run(knobs).results.find((r) => r.dataplane === dataplane);
    if (result === undefined) throw new Error(`recycling curve: the report has no result for dataplane "${dataplane}"`);
    if (result.reconnectsPerMinute === null) {
      throw new Error(
        `recycling curve: dataplane "${dataplane}" balances per request (no reconnects); expected a per-connection dataplane such as iptables`,
      );
    }
    return { maxOverMean: result.maxOverMean, reconnectsPerMinute: result.reconnectsPerMinute };
  };
  const points: RecyclingCurvePoint[] = [];
  for (const ms of settings.agesMs ?? CURVE_AGES_MS) {
    points.push({ recycling: 'age', setting: ms, ...figures({ serverMaxConnectionAgeMs: ms }) });
  }
  for (const tolerance of settings.tolerances ?? CURVE_TOLERANCES) {
    points.push({ recycling: 'fair-share', setting: tolerance, ...figures({ serverFairShareTolerance: tolerance }) });
  }
  return { dataplane, none: figures({}), points };
}
