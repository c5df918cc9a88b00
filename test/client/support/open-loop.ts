/**
 * Test support: open-loop load from several independent `BalancedAgent`s (each its own
 * `Cluster`, seeing only its own traffic) against pods that answer their index. Arrivals are a
 * seeded Poisson process per agent, released by a 1 ms tick (a late tick releases every arrival
 * due, so the offered rate holds on a loaded machine); each request's latency is measured from
 * its send to its body's end. Requests released before `warmUpMs` are sent but not measured.
 * Bounded: `requests` in total and `maxRunMs` of wall time, then it waits (bounded) for the
 * ones in flight.
 */
import { request } from 'undici';
import type { BalancedAgent } from '../../../src/index.js';
import { SeededRandom } from '../../../src/index.js';

export interface OpenLoopOptions {
  readonly agents: readonly BalancedAgent[];
  readonly url: string;
  /** Requests per second over all agents. */
  readonly ratePerSecond: number;
  /** Requests to send in total (warm-up included). */
  readonly requests: number;
  /** Requests sent before this long are not measured, ms. */
  readonly warmUpMs: number;
  readonly seed: number;
  readonly pods: number;
  readonly maxRunMs?: number;
}

export interface OpenLoopResult {
  /** Latencies of measured requests, ms, sorted. */
  readonly latenciesMs: number[];
  /**
   * Time the measured requests spent at their pod (queued and served), ms, sorted — when the
   * pods answer it after their index (`"<index> <ms>"`); else empty.
   */
  readonly podLatenciesMs: number[];
  /** Measured requests answered per pod index. */
  readonly perPod: number[];
  readonly failed: number;
  readonly sent: number;
  readonly measured: number;
  readonly elapsedMs: number;
}

/** The `q` quantile of sorted `xs` (nearest rank). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))] as number;
}

export async function openLoop(o: OpenLoopOptions): Promise<OpenLoopResult> {
  const perAgentRate = o.ratePerSecond / o.agents.length / 1000;
  const randoms = o.agents.map((_, i) => new SeededRandom(o.seed * 97 + i));
  const next = randoms.map((r) => -Math.log(1 - r.next()) / perAgentRate);
  const latencies: number[] = [];
  const podLatencies: number[] = [];
  const perPod = new Array<number>(o.pods).fill(0);
  let failed = 0;
  let sent = 0;
  let measured = 0;
  const pending = new Set<Promise<void>>();
  const start = performance.now();
  const maxRunMs = o.maxRunMs ?? 60_000;

  const send = (agent: BalancedAgent, measure: boolean) => {
    sent++;
    const t0 = performance.now();
    const p = (async () => {
      try {
        const res = await request(o.url, { dispatcher: agent });
        const text = await res.body.text();
        const ms = performance.now() - t0;
        if (res.statusCode !== 200) {
          failed++;
          return;
        }
        if (measure) {
          measured++;
          latencies.push(ms);
          const [index, atPod] = text.split(' ');
          if (atPod !== undefined) podLatencies.push(Number(atPod));
          const pod = Number(index);
          if (pod >= 0 && pod < o.pods) perPod[pod] = (perPod[pod] as number) + 1;
        }
      } catch {
        failed++;
      }
    })();
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };

  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now() - start;
      for (let a = 0; a < o.agents.length; a++) {
        while ((next[a] as number) <= now && sent < o.requests) {
          send(o.agents[a] as BalancedAgent, (next[a] as number) >= o.warmUpMs);
          next[a] = (next[a] as number) - Math.log(1 - (randoms[a] as SeededRandom).next()) / perAgentRate;
        }
      }
      if (sent >= o.requests || now > maxRunMs) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  const drainBy = performance.now() + 20_000;
  while (pending.size > 0 && performance.now() < drainBy) {
    await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 1_000))]);
  }
  latencies.sort((a, b) => a - b);
  podLatencies.sort((a, b) => a - b);
  return {
    latenciesMs: latencies,
    podLatenciesMs: podLatencies,
    perPod,
    failed: failed + pending.size,
    sent,
    measured,
    elapsedMs: performance.now() - start,
  };
}
