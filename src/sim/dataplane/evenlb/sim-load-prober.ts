/**
 * Load probes on virtual time, for the evenlb dataplanes whose policy probes (`prequal`). A
 * probe travels to the pod for half of `rttMs`, the pod answers from its state at that moment
 * — requests in flight (in service plus queued) and the latency a request arriving now may
 * expect (`SimPod.inFlight`, `SimPod.latencyEstimateMs`; NaN: unknown) — and the answer reaches the balancer's load record after the other half
 * (`EndpointLoad.probed`). A probe to a pod that is gone, or gone by the time it arrives, gets
 * no answer (a refused connection). Probes in flight sit in slots of typed arrays reused
 * through a free list, so probing allocates nothing once the table has grown; `sent` and
 * `answered` count them for the run's figures.
 */
import type { EndpointLoad } from '../../../balancing/endpoint-load.js';
import type { TrackedEndpoint } from '../../../balancing/picker.js';
import type { LoadProber } from '../../../balancing/policy.js';
import type { SimPod } from '../../model/sim-pod.js';
import type { SimulationContext } from '../../model/simulation-context.js';

/** Default probe round trip inside a cluster, ms. */
export const PROBE_RTT_MS = 0.5;

export class SimLoadProber implements LoadProber {
  /** Probes sent, ever. */
  sent = 0;
  /** Answers delivered to a load record, ever. */
  answered = 0;
  readonly #ctx: SimulationContext;
  readonly #halfRttMs: number;
  readonly #kArrive: number;
  readonly #kAnswer: number;
  #loads: (EndpointLoad | undefined)[] = [];
  #pod = new Int32Array(16);
  #inFlight = new Float64Array(16);
  #latencyMs = new Float64Array(16);
  readonly #free: number[] = [];

  constructor(ctx: SimulationContext, rttMs = PROBE_RTT_MS) {
    this.#ctx = ctx;
    this.#halfRttMs = rttMs / 2;
    this.#kArrive = ctx.scheduler.register((slot) => this.#arrive(slot));
    this.#kAnswer = ctx.scheduler.register((slot) => this.#answer(slot));
  }

  probe(target: TrackedEndpoint): void {
    this.sent++;
    this.#ctx.probeSent();
    const pod = this.#ctx.podOf(target.endpoint);
    if (pod === undefined || pod.state === 'gone') return;
    const slot = this.#alloc();
    this.#loads[slot] = target.load;
    this.#pod[slot] = pod.index;
    this.#ctx.scheduler.after(this.#halfRttMs, this.#kArrive, slot);
  }

  /** The probe reaches its pod: read the pod's state, send the answer back. */
  #arrive(slot: number): void {
    const pod = this.#ctx.pods[this.#pod[slot] as number] as SimPod;
    if (pod.state === 'gone') {
      this.#release(slot);
      return;
    }
    this.#inFlight[slot] = pod.inFlight;
    this.#latencyMs[slot] = pod.latencyEstimateMs(this.#ctx.scheduler.now);
    this.#ctx.scheduler.after(this.#halfRttMs, this.#kAnswer, slot);
  }

  #answer(slot: number): void {
    (this.#loads[slot] as EndpointLoad).probed(
      this.#inFlight[slot] as number,
      this.#latencyMs[slot] as number,
      this.#ctx.scheduler.now,
    );
    this.answered++;
    this.#release(slot);
  }

  #alloc(): number {
    const slot = this.#free.pop();
    if (slot !== undefined) return slot;
    const next = this.#loads.length;
    if (next === this.#pod.length) {
      const capacity = 2 * next;
      const pod = new Int32Array(capacity);
      pod.set(this.#pod);
      this.#pod = pod;
      const inFlight = new Float64Array(capacity);
      inFlight.set(this.#inFlight);
      this.#inFlight = inFlight;
      const latency = new Float64Array(capacity);
      latency.set(this.#latencyMs);
      this.#latencyMs = latency;
    }
    this.#loads.push(undefined);
    return next;
  }

  #release(slot: number): void {
    this.#loads[slot] = undefined;
    this.#free.push(slot);
  }
}
