/**
 * `pick()` allocates nothing: for every registered policy, on equal and on weighted sets, the
 * heap grows by less than 2 bytes per pick over a batch of picks (one boxed number per pick
 * is 16, one on every other pick 8). Each policy gets a warm-up so the measured code is optimised, and the least of
 * several batches counts, so a collection or a late compilation cannot fail the test — only an
 * allocation on every pick can.
 *
 * This file runs in a worker of its own (vitest.config.ts, ISOLATED): a picker's code is shared
 * by every picker of its policy in the process, and so is what V8 learnt from the contexts they
 * were given. Run after the other balancing files in one worker, the ring-hash and maglev pickers
 * had seen contexts of so many shapes that each read of `context.hash` was a generic load, which
 * boxes the number: 32 bytes per pick (two reads of 16), in one order of the files and not in
 * another.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { EndpointSet } from '../core/endpoint-set.js';
import type { PickContext, Picker } from './picker.js';
import { ensureBuiltinPolicies } from './policies/index.js';
import { registeredPolicies } from './policy.js';
import { endpointInputs, seededBalancer } from './testing/fixtures.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

ensureBuiltinPolicies();

/** Prepared contexts: writing a fresh 32-bit hash into one would box a number in the caller. */
const contexts: PickContext[] = Array.from({ length: 4096 }, (_, i) => ({ hash: Math.imul(i + 1, 0x9e3779b1) >>> 0 }));

function run(picker: Picker, count: number, withContext: boolean): number {
  let acc = 0;
  for (let i = 0; i < count; i++) acc += picker.pick(withContext ? contexts[i & 4095] : undefined).type.length;
  return acc;
}

/**
 * Picks per measured batch: large enough that heap accounting noise after a full collection
 * (sweeping, up to a few hundred KB) stays well under the threshold per pick, small enough
 * that 16 bytes per pick (6.4 MB) fits the young generation without a scavenge.
 */
const BATCH = 400_000;

function leastBytesPerPick(picker: Picker, withContext: boolean): number {
  run(picker, 200_000, withContext);
  let least = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 4; round++) {
    gc();
    const before = process.memoryUsage().heapUsed;
    run(picker, BATCH, withContext);
    least = Math.min(least, (process.memoryUsage().heapUsed - before) / BATCH);
  }
  return least;
}

describe.each(registeredPolicies().map((p) => [p.name, p] as const))('%s pick()', (_name, policy) => {
  it.each([
    { set: 'equal weights', weight: () => 1 },
    { set: 'weights 1-4', weight: (i: number) => 1 + (i % 4) },
  ])('allocates nothing per pick ($set, 1,000 endpoints)', ({ weight }) => {
    const { b } = seededBalancer(policy.name, 1);
    b.update(EndpointSet.from(endpointInputs(1000, (i) => ({ weight: weight(i) }))));
    b.picker.endpoints.forEach((t, i) => {
      for (let k = 0; k < i % 3; k++) t.load.start();
    });
    expect(leastBytesPerPick(b.picker, policy.kind === 'hash')).toBeLessThan(2);
  });
});
