/**
 * The pick loop shared by "power of d choices" policies (`least-request`, `peak-ewma`): draw
 * `choiceCount` distinct endpoints and keep the best by a policy's comparison. One endpoint is
 * returned without a draw; the common unweighted d = 2 case (P2C) draws a distinct uniform
 * pair from two `random.int` calls with no shuffle state; every other case goes through a
 * `CandidateDraw`, weighted when `weights` is given. Policies differ only in `better`.
 */
import type { Random } from '../../core/random.js';
import { CandidateDraw } from './candidate-draw.js';

/**
 * A pick function over `results` choosing the best of `choiceCount` distinct random
 * candidates. `better(i, j)` is true when candidate `i` should replace the current best `j`
 * (ties keep the earlier draw). `weights` undefined draws uniformly; otherwise candidates are
 * drawn in proportion to weight.
 *
 * @example
 * const pick = bestOfChoices(results, random, 2, undefined, (i, j) => loads[i].inFlight < loads[j].inFlight);
 */
export function bestOfChoices<T>(
  results: readonly T[],
  random: Random,
  choiceCount: number,
  weights: Float64Array | undefined,
  better: (i: number, j: number) => boolean,
): () => T {
  const n = results.length;
  if (n === 1) {
    const only = results[0] as T;
    return () => only;
  }
  const d = Math.min(choiceCount, n);
  if (weights === undefined && d === 2) {
    // The common case, P2C: a distinct uniform pair from two draws, no shuffle state.
    return () => {
      const a = random.int(n);
      let b = random.int(n - 1);
      if (b >= a) b++;
      return better(b, a) ? results[b]! : results[a]!;
    };
  }
  const draw = weights === undefined ? new CandidateDraw(n, random) : new CandidateDraw(n, random, weights);
  return () => {
    draw.begin();
    let best = draw.next();
    for (let c = 1; c < d; c++) {
      const i = draw.next();
      if (better(i, best)) best = i;
    }
    return results[best]!;
  };
}
