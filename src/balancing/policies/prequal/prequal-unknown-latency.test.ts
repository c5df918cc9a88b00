import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../core/clock.js';
import { EndpointSet } from '../../../core/endpoint-set.js';
import { SeededRandom } from '../../../core/random.js';
import { LoadReporter, type ReportedRequest } from '../../../server/load/load-reporter.js';
import { Balancer } from '../../balancer.js';
import type { EndpointLoad } from '../../endpoint-load.js';
import { LOAD_PROTOCOL, parseProbeAnswer } from '../../load-document.js';
import { parseLoadReport } from '../../load-report.js';
import type { TrackedEndpoint } from '../../picker.js';
import type { LoadProber } from '../../policy.js';
import { endpointInputs } from '../../testing/fixtures.js';

/**
 * Servers on virtual time that report their load with `evenlb/server`'s own `LoadReporter`
 * (the in-flight latency rule included): `workers` at a time for `serviceMs` each, the rest
 * queued FIFO. A probe is answered with the load document's text, a response carries the
 * `endpoint-load-metrics` header value — both parsed as a transport parses them.
 */
class Fleet {
  readonly reporters: LoadReporter[] = [];
  readonly #busy: number[] = [];
  readonly #queues: (() => void)[][] = [];

  constructor(
    readonly clock: ManualClock,
    readonly workers: number,
    readonly serviceMs: number,
  ) {}

  add(): void {
    this.reporters.push(new LoadReporter({ clock: this.clock, cpu: false }));
    this.#busy.push(0);
    this.#queues.push([]);
  }

  /** A request reaches server `i`; `done` gets its response's report value when it is answered. */
  request(i: number, done: (report: string | undefined) => void): void {
    const reporter = this.reporters[i] as LoadReporter;
    const request: ReportedRequest = reporter.begin();
    const serve = (): void => {
      this.#busy[i]!++;
      this.clock.setTimeout(() => {
        const value = request.reportValue();
        request.end();
        this.#busy[i]!--;
        this.#queues[i]!.shift()?.();
        done(value);
      }, this.serviceMs);
    };
    if (this.#busy[i]! < this.workers) serve();
    else this.#queues[i]!.push(serve);
  }

  close(): void {
    for (const r of this.reporters) r.close();
  }
}

/** Answers each probe 0.5 ms later with server `i`'s load document, as the HTTP prober reads it. */
class DocumentProber implements LoadProber {
  constructor(
    readonly fleet: Fleet,
    readonly serverOf: (t: TrackedEndpoint) => number,
  ) {}
  probe(target: TrackedEndpoint): void {
    const clock = this.fleet.clock;
    clock.setTimeout(() => {
      const probe = (this.fleet.reporters[this.serverOf(target)] as LoadReporter).probeAnswer();
      const answer = parseProbeAnswer(JSON.stringify({ protocol: LOAD_PROTOCOL, ...probe }));
      if (answer !== undefined) target.load.probed(answer.inFlight, answer.latencyMs ?? Number.NaN);
    }, 0.5);
  }
}

/**
 * `balancers` independent prequal balancers send Poisson traffic at `load` of the capacity of
 * `warm` equal servers for `warmMs`; then one fresh server (no request served yet) joins every
 * balancer's endpoint list, and the next `picks` picks are recorded (the server each went to).
 */
function scaleOut(seed: number, balancers: number, warm: number, warmMs: number, picks: number): number[] {
  const clock = new ManualClock();
  const fleet = new Fleet(clock, 2, 10);
  for (let i = 0; i < warm + 1; i++) fleet.add();
  const inputs = endpointInputs(warm + 1);
  const serverOf = (t: TrackedEndpoint): number => inputs.findIndex((e) => e.address === t.endpoint.address);
  const random = new SeededRandom(seed);
  const all = Array.from({ length: balancers }, (_, k) => {
    const b = new Balancer({
      policy: 'prequal',
      clock,
      random: new SeededRandom(seed * 100 + k),
      prober: new DocumentProber(fleet, serverOf),
      herdingGuard: false,
    });
    b.update(EndpointSet.from(inputs.slice(0, warm)));
    return b;
  });
  const capacityPerMs = (warm * fleet.workers) / fleet.serviceMs;
  const gapMs = (): number => -Math.log(1 - random.next()) / (0.7 * capacityPerMs);
  const recorded: number[] = [];
  const send = (): void => {
    const b = all[random.int(balancers)] as Balancer;
    const r = b.picker.pick();
    if (r.type !== 'picked') throw new Error('no endpoint');
    const load: EndpointLoad = r.load;
    const server = inputs.findIndex((e) => e.address === r.endpoint.address);
    if (clock.now() >= warmMs && recorded.length < picks) recorded.push(server);
    const started = load.start();
    fleet.request(server, (value) => {
      const report = parseLoadReport(value);
      if (report !== undefined) load.report(report);
      load.end(started, true);
    });
  };
  let added = false;
  while (recorded.length < picks) {
    clock.advance(gapMs());
    if (!added && clock.now() >= warmMs) {
      for (const b of all) b.update(EndpointSet.from(inputs));
      added = true;
    }
    send();
  }
  clock.advance(1_000);
  fleet.close();
  return recorded;
}

/**
 * One balancer, a pick per ms, each request held 20 ms; probes (one per pick) are answered
 * before each pick. Endpoints 0–3 are warm, with 0, 2, 2 and 2 requests in flight from other
 * clients plus this balancer's, at 10 ms per request in flight. Endpoint 4 has served nothing
 * and has none from others: it answers this balancer's requests in flight and `freshLatency`
 * (0 as older servers said, NaN when left out). Returns the picks of endpoint 4 over those of
 * endpoint 0, its twin in load, over `count` picks.
 */
function freshOverTwin(freshLatency: number, count: number): number {
  const clock = new ManualClock();
  const queued: TrackedEndpoint[] = [];
  const b = new Balancer({
    policy: 'prequal',
    policyOptions: { probesPerRequest: 1, maxProbeUses: 1000 },
    clock,
    random: new SeededRandom(3),
    prober: { probe: (t) => queued.push(t) },
    herdingGuard: false,
  });
  const inputs = endpointInputs(5);
  const at = (t: { endpoint: { address: string } }): number =>
    inputs.findIndex((e) => e.address === t.endpoint.address);
  b.update(EndpointSet.from(inputs));
  const picks = [0, 0, 0, 0, 0];
  for (let i = 0; i < count; i++) {
    for (const t of queued.splice(0)) {
      const rif = [0, 2, 2, 2, 0][at(t)]! + t.load.inFlight;
      t.load.probed(rif, at(t) === 4 ? freshLatency : 10 * (rif + 1));
    }
    clock.advance(1);
    const r = b.picker.pick();
    if (r.type !== 'picked') throw new Error('no endpoint');
    picks[at(r)]!++;
    const started = r.load.start();
    clock.setTimeout(() => r.load.end(started, true), 20);
  }
  return picks[4]! / picks[0]!;
}

describe('prequal and a server of unknown latency', () => {
  it.each([
    { said: 'no latency', latencyMs: Number.NaN },
    { said: 'latency 0, as older servers did', latencyMs: 0 },
  ])('ranks a server that answers $said by in-flight alone: as an equally loaded known one', ({ latencyMs }) => {
    // Read as a latency of 0 it was the fastest and cold until its in-flight passed the line:
    // 1.5× its twin's picks over 200 picks, growing; read as "ranks last" (NaN) it got 0.1×.
    const ratio = freshOverTwin(latencyMs, 200);
    expect(ratio).toBeGreaterThanOrEqual(0.75);
    expect(ratio).toBeLessThanOrEqual(1.3);
  });

  it('a server a scale-out adds is probed at once and takes about its fair share of the first picks', () => {
    // 6 balancers, 4 warm servers at 70% of their capacity, then a fifth joins: its fair share
    // of picks is 1/5. Before, no balancer compared it until a random probe (one per 25 picks)
    // reached it: it got none of the first 50 picks, and then read as latency 0 drew bursts.
    const warm = 4;
    for (const seed of [1, 2, 3, 4, 5]) {
      const picks = scaleOut(seed, 6, warm, 3_000, 200);
      const share = (n: number): number => (picks.slice(0, n).filter((s) => s === warm).length / n) * (warm + 1);
      expect(share(50)).toBeGreaterThanOrEqual(0.7);
      expect(share(50)).toBeLessThanOrEqual(1.6);
      expect(share(200)).toBeGreaterThanOrEqual(0.7);
      expect(share(200)).toBeLessThanOrEqual(1.5);
    }
  });
});
