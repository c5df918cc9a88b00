/**
 * The proxy's upstream latency buckets: the bounds, the per-endpoint counts the hot path
 * writes (a few arithmetic operations per observation), the Prometheus histogram that reads
 * them at scrape time, and windowed quantiles over them for the dashboard.
 */
/** Upper bounds (seconds) of the upstream latency histogram's buckets. */
export const LATENCY_BUCKETS_S: readonly number[] = Object.freeze([
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]);

export interface LatencyCounts {
  readonly cluster: string;
  readonly endpoint: string;
  /** Non-cumulative counts per bucket; observations above the last bound only count in `count`. */
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram backed by plain per-endpoint arrays: observing is a few arithmetic
 * operations (prom-client's own `observe` hashes the label set every time), and the registry
 * reads the cumulative buckets at scrape time.
 */
export function latencyHistogram(name: string, data: ReadonlyMap<string, LatencyCounts>) {
  const help = 'Upstream request duration (to the end of the response), seconds.';
  const get = async () => {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const c of data.values()) {
      let cumulative = 0;
      LATENCY_BUCKETS_S.forEach((le, i) => {
        cumulative += c.buckets[i] as number;
        values.push({
          metricName: `${name}_bucket`,
          labels: { le, cluster: c.cluster, endpoint: c.endpoint },
          value: cumulative,
        });
      });
      values.push({
        metricName: `${name}_bucket`,
        labels: { le: '+Inf', cluster: c.cluster, endpoint: c.endpoint },
        value: c.count,
      });
      values.push({ metricName: `${name}_sum`, labels: { cluster: c.cluster, endpoint: c.endpoint }, value: c.sum });
      values.push({
        metricName: `${name}_count`,
        labels: { cluster: c.cluster, endpoint: c.endpoint },
        value: c.count,
      });
    }
    return { name, help, type: 'histogram', aggregator: 'sum', values };
  };
  return { name, help, type: 'histogram', aggregator: 'sum', labelNames: ['cluster', 'endpoint'], get, reset() {} };
}

/** Bucket counts observed since `before` (all of `now` when there is no earlier sample). */
export function windowBuckets(
  now: Float64Array | undefined,
  before: Float64Array | undefined,
): Float64Array | undefined {
  if (now === undefined) return undefined;
  if (before === undefined) return now;
  const out = new Float64Array(now.length);
  for (let i = 0; i < now.length; i++) out[i] = (now[i] as number) - (before[i] as number);
  return out;
}

/**
 * The `q` quantile of non-cumulative bucket counts over `LATENCY_BUCKETS_S`, in ms, linear
 * within the bucket it falls in (the first bucket starts at 0); null when there are no counts.
 * Observations above the last bound are not in the buckets: a quantile there reads the last bound.
 */
export function bucketQuantileMs(buckets: Float64Array | undefined, q: number): number | null {
  if (buckets === undefined) return null;
  let total = 0;
  for (const n of buckets) total += n;
  if (total <= 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    const n = buckets[i] as number;
    if (n > 0 && seen + n >= rank) {
      const lo = i === 0 ? 0 : (LATENCY_BUCKETS_S[i - 1] as number);
      const hi = LATENCY_BUCKETS_S[i] as number;
      return (lo + ((hi - lo) * (rank - seen)) / n) * 1000;
    }
    seen += n;
  }
  return (LATENCY_BUCKETS_S[LATENCY_BUCKETS_S.length - 1] as number) * 1000;
}
