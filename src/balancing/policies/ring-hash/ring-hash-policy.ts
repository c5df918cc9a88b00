/**
 * `ring-hash`: consistent hashing on a Ketama-style ring (see `HashRing`). Requests with the
 * same key (`PickContext.hash`, e.g. `hashKey(clientAddress)` or a header) go to the same
 * endpoint while it stays eligible; when an endpoint joins or leaves only about 1/N of keys
 * move. Without a key the picker draws a random one, which spreads like `random`.
 *
 * Ring size: each endpoint gets `replicas × weight / smallest weight` points (weights are
 * honoured by point count); the total is then scaled up to `minRingSize` or down to
 * `maxRingSize` if it falls outside. Points depend only on the endpoint key, so as long as no
 * scaling kicks in an endpoint's points never move. More points, smoother spread: the share of
 * keys an endpoint gets varies by about 1/√(points per endpoint).
 */
import { opt, optionError, type Parsed, parseOptions } from '../../../core/options.js';
import { hashKey, type Picked, type PickFn, type TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy } from '../../policy.js';
import { endpointWeights } from '../../sampling/weights.js';
import { HashRing } from './hash-ring.js';

const spec = {
  /** Ring points per endpoint of the smallest weight; default 256. */
  replicas: opt.int({ min: 1, max: 65_536, default: 256 }),
  /** Fewest points on the ring (scaled up to this); default 1,024. */
  minRingSize: opt.int({ min: 1, max: 8_388_608, default: 1024 }),
  /** Most points on the ring (scaled down to this); default 524,288 (a build stays near 20 ms). */
  maxRingSize: opt.int({ min: 1, max: 8_388_608, default: 524_288 }),
};

export type RingHashOptions = Parsed<typeof spec>;

/** Points per endpoint for `weights` under `options`; each at least 1. */
export function ringPointCounts(weights: Float64Array, options: RingHashOptions): Int32Array {
  let min = Number.POSITIVE_INFINITY;
  for (const w of weights) min = Math.min(min, w);
  let total = 0;
  for (const w of weights) total += (options.replicas * w) / min;
  let scale = 1;
  if (total < options.minRingSize) scale = options.minRingSize / total;
  else if (total > options.maxRingSize) scale = options.maxRingSize / total;
  const counts = new Int32Array(weights.length);
  for (let i = 0; i < weights.length; i++) {
    counts[i] = Math.max(1, Math.round(((options.replicas * (weights[i] as number)) / min) * scale));
  }
  return counts;
}

export const ringHashPolicy: BalancingPolicy<RingHashOptions> = {
  name: 'ring-hash',
  description: 'consistent hashing of PickContext.hash on a ring with virtual nodes (Ketama)',
  kind: 'hash',
  parseOptions(input) {
    const o = parseOptions('ring-hash policy', input, spec);
    if (o.maxRingSize < o.minRingSize) {
      throw optionError('ring-hash policy', 'maxRingSize', `>= minRingSize (${o.minRingSize})`, o.maxRingSize);
    }
    return o;
  },
  create(options, env) {
    const random = env.random;
    return {
      build(endpoints: readonly TrackedEndpoint[]): PickFn {
        const results: readonly Picked[] = endpoints.map((t) => t.result);
        const keys = endpoints.map((t) => t.endpoint.key);
        const ring = new HashRing(
          keys.map((k) => hashKey(k)),
          ringPointCounts(endpointWeights(endpoints), options),
        );
        const owners = ring.owners;
        const size = ring.size;
        return (context) => {
          // Branch on the context rather than `context?.hash`, and draw a missing key as two
          // 16-bit integers: a value that may be undefined, or a 32-bit number passed between
          // calls, is boxed on the heap; this keeps the key an unboxed integer.
          let hash: number;
          if (context === undefined || context.hash === undefined)
            hash = random.int(65_536) * 65_536 + random.int(65_536);
          else hash = context.hash >>> 0;
          let at = ring.locate(hash);
          const exclude = context?.exclude;
          if (exclude !== undefined && keys[owners[at]!] === exclude && endpoints.length > 1) {
            // Retry on another endpoint: the next point on the ring owned by someone else.
            const skip = owners[at]!;
            for (let step = 1; step < size && owners[at]! === skip; step++) at = at + 1 === size ? 0 : at + 1;
          }
          return results[owners[at]!]!;
        };
      },
    };
  },
};
