/**
 * `source-hash`: the analogue of IPVS `sh`. The request key (`PickContext.hash`, usually
 * `hashKey(clientAddress)`) modulo the number of endpoints, over the endpoints sorted by key,
 * so every client and proxy replica maps a key to the same endpoint whatever order discovery
 * lists them in. Weighted sets map the key onto cumulative weight instead of a plain modulo.
 *
 * Unlike `ring-hash` and `maglev` this is not consistent hashing: when one endpoint joins or
 * leaves N, about N/(N+1) of all keys move (every key whose `hash mod N` changes). Use it where
 * the endpoint set is stable and a pick must be one modulo; use `maglev` or `ring-hash` when
 * affinity must survive scaling. Without a key the picker draws a random one.
 */
import { parseOptions } from '../../../core/options.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy } from '../../policy.js';
import { sortedByKey, weightsUniform } from '../../sampling/weights.js';

export type SourceHashOptions = Readonly<Record<string, never>>;

export const sourceHashPolicy: BalancingPolicy<SourceHashOptions> = {
  name: 'source-hash',
  description: 'PickContext.hash modulo the endpoints sorted by key (IPVS sh); not consistent on change',
  kind: 'hash',
  parseOptions: (input) => parseOptions('source-hash policy', input, {}) as SourceHashOptions,
  create(_options, env) {
    const random = env.random;
    return {
      build(endpoints: readonly TrackedEndpoint[]): PickFn {
        const sorted = sortedByKey(endpoints);
        const n = sorted.length;
        const results: readonly Picked[] = sorted.map((t) => t.result);
        const keys = sorted.map((t) => t.endpoint.key);
        // Weighted sets: each endpoint's upper bound on the cumulative-weight line, scaled so
        // that a 32-bit key falls in the bucket of its endpoint. Equal weights: plain modulo.
        let upper: Float64Array | undefined;
        if (!weightsUniform(sorted)) {
          upper = new Float64Array(n);
          let total = 0;
          for (let i = 0; i < n; i++) upper[i] = total += sorted[i]!.weight;
          for (let i = 0; i < n; i++) upper[i] = (upper[i]! / total) * 4294967296;
        }
        return (context) => {
          // Branch on the context rather than `context?.hash`, and draw a missing key as two
          // 16-bit integers: a value that may be undefined, or a 32-bit number passed between
          // calls, is boxed on the heap; this keeps the key an unboxed integer.
          let hash: number;
          if (context === undefined || context.hash === undefined)
            hash = random.int(65_536) * 65_536 + random.int(65_536);
          else hash = context.hash >>> 0;
          let at: number;
          if (upper === undefined) at = hash % n;
          else {
            // The first endpoint whose upper bound exceeds the key.
            let lo = 0;
            let hi = n - 1;
            while (lo < hi) {
              const mid = (lo + hi) >>> 1;
              if (upper[mid]! <= hash) lo = mid + 1;
              else hi = mid;
            }
            at = lo;
          }
          const exclude = context?.exclude;
          if (exclude !== undefined && keys[at] === exclude && n > 1) at = at + 1 === n ? 0 : at + 1;
          return results[at]!;
        };
      },
    };
  },
};
