/**
 * `prequal`: Prequal (Wydrowski, Kleinberg, Rumble, Google — NSDI 2024, "Load is not what you
 * should balance"). Instead of this balancer's own in-flight counts, which see only its own
 * traffic, it balances on what servers say: asynchronous probes ask endpoints for their
 * requests in flight (RIF) and a recent latency; answers wait in a probe pool and are reused;
 * each pick applies the hot/cold rule to the pool — among answers whose RIF is at or below the
 * `coldQuantile` of recent answers the lowest latency wins, and when all are hot the lowest
 * RIF (see `probe-pool.ts`).
 *
 * Probing runs on a budget: each pick earns `probesPerRequest` of a probe, and each whole one
 * is sent (`PolicyEnv.prober.probe`, which only queues it) to a uniformly random endpoint,
 * which joins the pool. Load reports carrying `named_metrics.inflight` on responses refresh an
 * endpoint's answer for free; while the pool has room, the endpoint a request goes to joins it
 * too, so its response's report answers for it — at the probe rate alone (one in 25 picks) a
 * balancer would take a hundred or more picks to hold the few endpoints it compares, and pick
 * as least-request on its own blind counts meanwhile. Endpoints that join a later list (a
 * scale-out) are probed at the next pick, on credit against the budget, and join the pool: a
 * random probe would reach one only after about n / probesPerRequest picks, and until then no
 * pick compares it (its answer, in flight 0 and no latency yet, ranks it by in-flight alone; see
 * `probe-pool.ts`). When the pool has no usable answer (none yet, all too old or
 * used up) the pick falls back to `least-request` on this balancer's own in-flight counts;
 * without a prober it is exactly `least-request`.
 *
 * The pick reads no clock (answer ages count from the newest answer seen) and allocates
 * nothing; it is O(poolSize).
 *
 * Simplified from the paper: the pool is filled by probes and, while it has room, by the
 * endpoints requests go to (no probes on idle), one answer per endpoint; the pick compares the whole pool (d = pool size); removal happens when a
 * newcomer needs a slot (empty, then spent, then oldest and worst in turn) rather than at a
 * separate removal rate; the reuse budget `maxProbeUses` defaults to the paper's formula with
 * δ = 1 and no removal rate, 2 / r, r being the answers the pool actually takes per pick —
 * probes and piggybacked reports: about 2 uses when every response carries a report, 50 on
 * probes alone at the default rate. A budget from the probe rate alone (50) would let one
 * answer steer fifty picks while newer answers keep arriving; with 50 independent balancers
 * each sending repeatedly to what its answers show best, that stale steering cost 10% of p99
 * against least-request on equal pods and a third more than peak-EWMA on unequal ones in the
 * simulator. The probe rate default is far below the paper's 3 per query (it leans on
 * piggybacked reports), to stay under 5% of requests.
 */
import { opt, type Parsed, parseOptions } from '../../../core/options.js';
import type { Picked, PickFn, TrackedEndpoint } from '../../picker.js';
import type { BalancingPolicy, PickerBuilder, PolicyEnv } from '../../policy.js';
import { endpointWeights } from '../../sampling/weights.js';
import { leastRequestPick } from '../least-request/least-request-policy.js';
import { MAX_PROBE_USES, ProbePool, reuseBudget } from './probe-pool.js';

const spec = {
  /** Probes sent per pick, as a rate (0.04: one probe every 25 picks); 0 = none. Default 0.04. */
  probesPerRequest: opt.number({ min: 0, max: 16, default: 0.04 }),
  /** Endpoints (answers) the probe pool holds; default 16 (the paper's). */
  poolSize: opt.int({ min: 1, max: 256, default: 16 }),
  /**
   * Picks one answer may serve. Default: 2 / answers per pick, measured over 256 picks (the
   * first windows 16, 32, … picks) — about 2 when every
   * response carries a report, ⌈2 / probesPerRequest⌉ (50 at the default rate) on probes alone.
   */
  maxProbeUses: opt.int({ min: 1, max: MAX_PROBE_USES, optional: true }),
  /** Age beyond which an answer is not used, ms; default 1,000. */
  maxProbeAgeMs: opt.number({ min: 0, exclusiveMin: true, default: 1_000 }),
  /** Quantile of recent answers' in-flight counts above which an endpoint is hot; default 0.84. */
  coldQuantile: opt.number({ min: 0, max: 1, default: 0.84 }),
  /** Candidates of the least-request fallback (d); default 2. */
  choiceCount: opt.int({ min: 1, max: 64, default: 2 }),
};

export type PrequalOptions = Parsed<typeof spec>;

/**
 * The reuse budget before answers are counted: the option, else 2 / probesPerRequest within
 * [1, 100,000] (answers from probes alone; see `reuseBudget`). Without the option the pool then follows the rate
 * at which answers arrive (`reuseBudget`), piggybacked reports included.
 *
 * @example
 * probeUses(prequalPolicy.parseOptions({ probesPerRequest: 0.5 })) // 4
 */
export function probeUses(options: PrequalOptions): number {
  if (options.maxProbeUses !== undefined) return options.maxProbeUses;
  if (options.probesPerRequest <= 0) return 1;
  return reuseBudget(options.probesPerRequest);
}

/**
 * Each endpoint's highest weight / its weight (≥ 1; 1 for the heaviest, 10 for one at a tenth:
 * pushback), by which the pool scales its in-flight and latency: an endpoint of full weight is
 * compared on its answers as they are.
 */
function penalties(endpoints: readonly TrackedEndpoint[]): Float64Array {
  const weights = endpointWeights(endpoints);
  let highest = 0;
  for (const w of weights) highest = Math.max(highest, w);
  return weights.map((w) => (w > 0 ? highest / w : 1));
}

class PrequalBuilder implements PickerBuilder {
  readonly #options: PrequalOptions;
  readonly #env: PolicyEnv;
  readonly #pool: ProbePool;
  /** [probe credit]: a typed slot, so adding a fraction never boxes a number. */
  readonly #credit = new Float64Array(1);
  /** Keys of the last endpoint list built (undefined before the first). */
  #listed: ReadonlySet<string> | undefined;
  /** Keys that joined a later list and are not probed yet. */
  readonly #newcomers = new Set<string>();

  constructor(options: PrequalOptions, env: PolicyEnv) {
    this.#options = options;
    this.#env = env;
    this.#pool = new ProbePool({
      poolSize: options.poolSize,
      maxProbeUses: options.maxProbeUses ?? { initial: probeUses(options) },
      maxProbeAgeMs: options.maxProbeAgeMs,
      coldQuantile: options.coldQuantile,
    });
  }

  build(endpoints: readonly TrackedEndpoint[]): PickFn {
    const { random, prober } = this.#env;
    const fallback = leastRequestPick(endpoints, random, this.#options.choiceCount);
    const n = endpoints.length;
    const perWeight = penalties(endpoints);
    if (prober === undefined || n === 1 || !this.#pool.rebind(endpoints, perWeight)) return fallback;
    const pool = this.#pool;
    const results: readonly Picked[] = endpoints.map((t) => t.result);
    const keys = endpoints.map((t) => t.endpoint.key);
    const positions = new Map<Picked, number>(results.map((r, i) => [r, i]));
    const rate = this.#options.probesPerRequest;
    const spread = n > this.#options.poolSize;
    const credit = this.#credit;
    const newcomers = this.#newcomersAt(keys);
    let unprobed = newcomers.length;
    return (context) => {
      if (unprobed > 0) {
        // Endpoints that joined (a scale-out) are probed at once, on credit, so they are
        // compared from their first answer on instead of waiting for a random probe.
        for (const p of newcomers) {
          pool.admit(p, keys[p]!, endpoints[p]!.load.index);
          prober.probe(endpoints[p]!);
          this.#newcomers.delete(keys[p]!);
        }
        credit[0]! -= unprobed;
        unprobed = 0;
      }
      credit[0]! += rate;
      // Above one probe per pick, a pick sends several.
      while (credit[0]! >= 1) {
        credit[0]! -= 1;
        // A uniformly random endpoint; when the pool cannot hold them all, prefer a newcomer.
        let p = random.int(n);
        if (spread && pool.has(p)) p = random.int(n);
        const target = endpoints[p]!;
        pool.admit(p, keys[p]!, target.load.index);
        prober.probe(target);
      }
      const p = pool.select();
      if (p >= 0) return results[p]!;
      const picked = fallback(context);
      // While the pool has room, the endpoint a request goes to joins it: the response's load
      // report answers for it as a probe would.
      if (pool.filling) {
        const q = positions.get(picked);
        if (q !== undefined) pool.admit(q, keys[q]!, endpoints[q]!.load.index);
      }
      return picked;
    };
  }

  /**
   * Positions of the keys in `keys` that were not in the last list built (and, still listed,
   * not probed since they joined), at most `poolSize`; none on the first list, which the pool
   * fills from the endpoints its requests go to.
   */
  #newcomersAt(keys: readonly string[]): Int32Array {
    const listed = this.#listed;
    this.#listed = new Set(keys);
    if (listed !== undefined) for (const k of keys) if (!listed.has(k)) this.#newcomers.add(k);
    const positions: number[] = [];
    for (const [p, k] of keys.entries()) {
      if (this.#newcomers.has(k) && positions.length < this.#options.poolSize) positions.push(p);
    }
    for (const k of this.#newcomers) if (!this.#listed.has(k)) this.#newcomers.delete(k);
    return Int32Array.from(positions);
  }
}

export const prequalPolicy: BalancingPolicy<PrequalOptions> = {
  name: 'prequal',
  description: 'Prequal: probe pool of server in-flight and latency, hot/cold rule; least-request without answers',
  kind: 'load',
  loadSignals: ['probes', 'reports'],
  parseOptions: (input) => parseOptions('prequal policy', input, spec),
  choiceCount: (options) => options.choiceCount,
  create: (options, env) => new PrequalBuilder(options, env),
};
