/**
 * How unevenly load is spread: the figures every part of evenlb reports (client stats, proxy
 * gauges, simulator, demo) from one implementation.
 *
 * - `maxOverMean`: the busiest share over the mean share; 1 is perfect, K means one of K takes all.
 * - `cov`: coefficient of variation (population standard deviation / mean); 0 is perfect.
 * - `jain`: Jain's fairness index (Σx)² / (n·Σx²), in [1/n, 1]; 1 is perfect.
 *
 * An empty list or an all-zero list counts as perfectly even (nothing to be uneven about).
 */

export interface Imbalance {
  readonly count: number;
  readonly total: number;
  readonly mean: number;
  readonly max: number;
  readonly min: number;
  readonly maxOverMean: number;
  readonly cov: number;
  readonly jain: number;
}

/**
 * Imbalance figures for per-endpoint loads (request counts, rates, connection counts).
 *
 * @example
 * imbalance([10, 10, 10, 30]) // maxOverMean 2, jain 0.75
 */
export function imbalance(values: readonly number[]): Imbalance {
  const n = values.length;
  let total = 0;
  let sumSq = 0;
  let max = n === 0 ? 0 : Number.NEGATIVE_INFINITY;
  let min = n === 0 ? 0 : Number.POSITIVE_INFINITY;
  for (const v of values) {
    total += v;
    sumSq += v * v;
    if (v > max) max = v;
    if (v < min) min = v;
  }
  const mean = n === 0 ? 0 : total / n;
  if (n === 0 || total === 0) return { count: n, total, mean, max, min, maxOverMean: 1, cov: 0, jain: 1 };
  const variance = Math.max(0, sumSq / n - mean * mean);
  return {
    count: n,
    total,
    mean,
    max,
    min,
    maxOverMean: max / mean,
    cov: Math.sqrt(variance) / mean,
    jain: (total * total) / (n * sumSq),
  };
}
