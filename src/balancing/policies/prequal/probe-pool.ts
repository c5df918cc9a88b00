/**
 * `prequal`'s probe pool: up to `poolSize` endpoints this balancer has probed, each with the
 * answer it currently trusts — requests in flight at the server (RIF) and a latency estimate —
 * when that answer arrived and how many picks have used it. Answers are not pushed here: a
 * pick reads each slot's load record (`ReportedLoad`) and takes a newer answer when one has
 * come, either a probe answer (`EndpointLoad.probed`) or a load report carrying
 * `named_metrics.inflight` on a response (piggybacked; its latency is the report's
 * `named_metrics.latency_ms` if present, else the balancer's own average for the endpoint).
 *
 * Selection is Prequal's hot/cold lexicographic rule over the usable slots (answer younger
 * than `maxProbeAgeMs`, used fewer than the reuse budget's times — fixed, or 2 / answers
 * taken per pick over the last `REUSE_WINDOW_PICKS` picks, the first windows shorter): the answer's RIF moves by this
 * balancer's own in-flight change at the endpoint since the answer (requests it sent there
 * minus those that came back — the paper adds 1 per use), a slot is hot when that RIF is
 * above the `coldQuantile` of recent answers' RIF; among cold slots the lowest latency wins
 * (ties: lower RIF), and a cold slot of unknown latency (the server has completed nothing yet:
 * its answer left the latency out, or said 0 as older servers did) is ranked by RIF alone — it
 * wins when no cold slot of known latency has fewer in flight, so a pod a scale-out just added
 * takes about what least-request would give it until its first answers carry a latency, neither
 * a burst on a latency of 0 nor nothing. The answer's latency is for a request arriving at the answer's RIF; when
 * this balancer's own requests have since raised the RIF, the latency is compared scaled by
 * (RIF now + 1) / (answered RIF + 1), as Linkerd's cost grows with pending requests — else a
 * fast endpoint would draw every pick until it turned hot, in bursts its server queues. If all
 * are hot the lowest RIF wins — or nothing (the caller falls back) when fewer than two slots
 * are usable, since one answer is no comparison. An endpoint below the highest weight (the
 * pushback penalty, or a lighter endpoint) is compared with its RIF + 1 and its latency
 * multiplied by highest weight / its weight, so even an idle endpoint that pushed back looks
 * busy; endpoints of full weight are compared on their answers as they are.
 *
 * Age is measured against the newest answer the pool has seen, not a clock read (see
 * `#latestMs`): after a long pause, the first picks may use answers from before it, at most
 * the reuse budget's times each, until fresh answers arrive and expire them.
 *
 * A probed endpoint not in the pool (or, while a slot is empty, one a request went to: its
 * response's report answers for it) takes an empty or spent slot (answer expired and not
 * refreshed, or used up), else — alternately — the oldest or the worst slot (the hottest, or
 * when none is hot the slowest), as the paper removes. Everything is typed arrays sized once;
 * `select` and `admit` allocate nothing.
 */
import type { LoadTracker } from '../../endpoint-load.js';
import type { TrackedEndpoint } from '../../picker.js';
import { REPORT_STRIDE, type ReportedLoad, ReportField } from '../../reported-load.js';
import { RifQuantile } from './rif-quantile.js';

export interface ProbePoolOptions {
  readonly poolSize: number;
  /**
   * Picks one answer may serve: a number, or `{ initial }` to follow the answer rate (see
   * `REUSE_WINDOW_PICKS`), starting from `initial` until the first window is measured.
   */
  readonly maxProbeUses: number | { readonly initial: number };
  readonly maxProbeAgeMs: number;
  readonly coldQuantile: number;
}

/**
 * Picks over which an adaptive reuse budget measures the answers the pool took (probe answers
 * and piggybacked reports of pooled endpoints): the budget is then 2 / answers per pick
 * (`reuseBudget`) — the paper's b_reuse = (1 + δ) / r with δ = 1 and r the rate at which fresh
 * answers actually arrive, not the probe rate alone.
 */
export const REUSE_WINDOW_PICKS = 256;
/**
 * Picks of the first reuse window; each next one is twice as long, up to `REUSE_WINDOW_PICKS`.
 * A balancer picking 27 times a second would otherwise keep the initial budget (50 on probes
 * alone, where reports bring about 2) for its first 9.5 s.
 */
export const FIRST_REUSE_WINDOW_PICKS = 16;
/** The largest reuse budget. */
export const MAX_PROBE_USES = 100_000;

/**
 * 2 / answersPerPick to the nearest whole use, within [1, MAX_PROBE_USES]; MAX_PROBE_USES when
 * no answer came. To the nearest, not up: answers taken per pick run a little under one when
 * every response carries a report (two reports of one endpoint between picks count once), and
 * rounding up would make that three uses — answers steering picks longer than they stay true.
 *
 * @example
 * reuseBudget(0.9) // 2
 * reuseBudget(0.04) // 50
 */
export function reuseBudget(answersPerPick: number): number {
  if (!(answersPerPick > 0)) return MAX_PROBE_USES;
  return Math.min(MAX_PROBE_USES, Math.max(1, Math.round(2 / answersPerPick)));
}

const PROBED_AT = ReportField.probedAtMs;
const PROBE_RIF = ReportField.probeInFlight;
const PROBE_LATENCY = ReportField.probeLatencyMs;
const REPORTED_AT = ReportField.reportedAtMs;
const REPORTED_RIF = ReportField.reportedInFlight;
const REPORTED_LATENCY = ReportField.reportedLatencyMs;

export class ProbePool {
  readonly #o: ProbePoolOptions;
  readonly #keys: (string | undefined)[];
  /** Slot → position in the current endpoint list; -1 = empty. */
  readonly #pos: Int32Array;
  /** Slot → load-record index in the tracker. */
  readonly #record: Int32Array;
  /** Slot → arrival time of the answer in use (-∞: none yet). */
  readonly #stamp: Float64Array;
  readonly #rif: Float64Array;
  readonly #latency: Float64Array;
  readonly #uses: Int32Array;
  /** Slot → this balancer's own in-flight count at the endpoint when the answer was taken. */
  readonly #ownAtAnswer: Int32Array;
  /** Slot → when the endpoint entered the pool (its probe was sent). */
  readonly #filledMs: Float64Array;
  /** Position → slot + 1, 0 = not in the pool. */
  #slotOf = new Int32Array(0);
  #tracker: LoadTracker | undefined;
  #reported: ReportedLoad | undefined;
  #perWeight: Float64Array = new Float64Array(0);
  /**
   * [the newest answer time seen]: the pool's clock. A pick reads no clock (on a real clock a
   * read allocates a number); answers arrive stamped, so the newest one tells the time well
   * enough to expire the others, as long as answers flow — and they flow while picks probe.
   */
  readonly #latestMs = new Float64Array([Number.NEGATIVE_INFINITY]);
  readonly #quantile: RifQuantile;
  #evictWorst = false;
  /** Slots holding no endpoint. */
  #empty: number;
  /** `ReportedLoad.changes` when the slots were last refreshed (-1: never). */
  #seenChanges = -1;
  /** The reuse budget in force. */
  #maxUses: number;
  readonly #adaptive: boolean;
  /** Picks and answers taken in the current reuse window (adaptive budget). */
  #windowPicks = 0;
  /** Picks of the current reuse window. */
  #windowLength = FIRST_REUSE_WINDOW_PICKS;
  #windowAnswers = 0;

  constructor(options: ProbePoolOptions) {
    this.#o = options;
    const uses = options.maxProbeUses;
    this.#adaptive = typeof uses !== 'number';
    this.#maxUses = typeof uses === 'number' ? uses : uses.initial;
    const m = options.poolSize;
    this.#keys = new Array<string | undefined>(m).fill(undefined);
    this.#pos = new Int32Array(m).fill(-1);
    this.#record = new Int32Array(m);
    this.#stamp = new Float64Array(m).fill(Number.NEGATIVE_INFINITY);
    this.#rif = new Float64Array(m);
    this.#latency = new Float64Array(m);
    this.#uses = new Int32Array(m);
    this.#ownAtAnswer = new Int32Array(m);
    this.#filledMs = new Float64Array(m);
    this.#quantile = new RifQuantile(options.coldQuantile);
    this.#empty = m;
  }

  /** Picks one answer may serve now (fixed, or following the answer rate). */
  get maxUses(): number {
    return this.#maxUses;
  }

  /** The in-flight line above which a slot is hot (+∞ before any answer). */
  get hotAbove(): number {
    return this.#quantile.threshold;
  }

  /**
   * Follows a new endpoint list (`perWeight[i]`: highest weight / weight of position i): slots of
   * endpoints still listed move to their new positions, the others empty. False when the
   * records do not sit in one tracker (a hand-built list): the caller then does not use the pool.
   */
  rebind(endpoints: readonly TrackedEndpoint[], perWeight: Float64Array): boolean {
    const tracker = endpoints[0]?.load.tracker;
    const at = new Map<string, number>();
    for (const [i, t] of endpoints.entries()) {
      if (t.load.tracker !== tracker) return false;
      at.set(t.endpoint.key, i);
    }
    this.#tracker = tracker;
    this.#reported = tracker?.reported;
    this.#perWeight = perWeight;
    this.#slotOf = new Int32Array(endpoints.length);
    for (let s = 0; s < this.#pos.length; s++) {
      const key = this.#keys[s];
      const p = key === undefined ? undefined : at.get(key);
      if (p === undefined) {
        this.#clear(s);
        continue;
      }
      this.#pos[s] = p;
      this.#record[s] = (endpoints[p] as TrackedEndpoint).load.index;
      this.#slotOf[p] = s + 1;
    }
    return tracker !== undefined;
  }

  /** True while a slot is empty and some listed endpoint is not in the pool (it is still filling). */
  get filling(): boolean {
    return this.#empty > 0 && this.#pos.length - this.#empty < this.#slotOf.length;
  }

  /** True when position `p` holds a slot. */
  has(p: number): boolean {
    return this.#slotOf[p] !== 0;
  }

  /**
   * Position `p` (endpoint `key`, record `record`) was just probed: give it a slot unless it
   * has one, evicting as the module comment says.
   */
  admit(p: number, key: string, record: number): void {
    if (this.#slotOf[p] !== 0) return;
    const nowMs = this.#latestMs[0] as number;
    const s = this.#victim(nowMs);
    const old = this.#pos[s] as number;
    if (old >= 0) this.#slotOf[old] = 0;
    else this.#empty--;
    this.#keys[s] = key;
    this.#pos[s] = p;
    this.#record[s] = record;
    this.#stamp[s] = Number.NEGATIVE_INFINITY;
    this.#uses[s] = 0;
    this.#filledMs[s] = nowMs;
    this.#slotOf[p] = s + 1;
  }

  /** The position Prequal's rule picks now, counting the use; -1 when no slot is usable. */
  select(): number {
    const reported = this.#reported as ReportedLoad;
    if (reported.changes !== this.#seenChanges) this.#refresh(reported);
    const tracker = this.#tracker as LoadTracker;
    const pos = this.#pos;
    const records = this.#record;
    const stamp = this.#stamp;
    const rifs = this.#rif;
    const latencies = this.#latency;
    const uses = this.#uses;
    const ownAtAnswer = this.#ownAtAnswer;
    const own = tracker.inFlightCounts;
    const perWeight = this.#perWeight;
    // Answers from before this are too old; never -∞, so a slot without an answer (-∞) is out.
    const oldest = Math.max(this.#latestMs[0]! - this.#o.maxProbeAgeMs, -Number.MAX_VALUE);
    if (this.#adaptive && ++this.#windowPicks >= this.#windowLength) {
      this.#maxUses = reuseBudget(this.#windowAnswers / this.#windowPicks);
      this.#windowLength = Math.min(REUSE_WINDOW_PICKS, 2 * this.#windowLength);
      this.#windowPicks = 0;
      this.#windowAnswers = 0;
    }
    const maxUses = this.#maxUses;
    const hotAbove = this.#quantile.threshold;
    let cold = -1;
    let coldLatency = Number.POSITIVE_INFINITY;
    let coldRif = Number.POSITIVE_INFINITY;
    // The lowest RIF of the cold slots of known latency, and the cold slot of unknown latency
    // with the lowest RIF (a server that has completed nothing yet).
    let knownRif = Number.POSITIVE_INFINITY;
    let unknown = -1;
    let unknownRif = Number.POSITIVE_INFINITY;
    let hot = -1;
    let hotRif = Number.POSITIVE_INFINITY;
    let usable = 0;
    for (let s = 0; s < pos.length; s++) {
      const p = pos[s]!;
      if (p < 0 || !(stamp[s]! >= oldest) || uses[s]! >= maxUses) continue;
      usable++;
      const w = perWeight[p]!;
      // The answer's RIF, moved by what this balancer itself sent and got back since.
      const current = Math.max(rifs[s]! + own[records[s]!]! - ownAtAnswer[s]!, 0);
      const rif = w === 1 ? current : (current + 1) * w - 1;
      if (rif <= hotAbove) {
        const answered = rifs[s]!;
        if (!(latencies[s]! >= 0)) {
          // Unknown latency: ranked by RIF alone (below).
          if (rif < unknownRif) {
            unknown = s;
            unknownRif = rif;
          }
          continue;
        }
        if (rif < knownRif) knownRif = rif;
        // Requests this balancer added since the answer raise the latency as they raise the RIF.
        const l = current > answered ? (latencies[s]! * (current + 1)) / (answered + 1) : latencies[s]!;
        const latency = l * w;
        if (cold < 0 || latency < coldLatency || (latency === coldLatency && rif < coldRif)) {
          cold = s;
          coldLatency = latency;
          coldRif = rif;
        }
      } else if (rif < hotRif) {
        hot = s;
        hotRif = rif;
      }
    }
    // Fewer than two to compare: the pool knows too little (the other answers expired or were
    // used up); the caller's fallback spreads instead of piling onto the one endpoint it knows.
    if (usable < 2) return -1;
    // A cold slot of unknown latency wins when no cold one of known latency has fewer in flight
    // (ties to it, so that it learns its latency): never on a latency it does not have, never
    // starved while it is as idle as the idlest.
    const chosen = unknown >= 0 && unknownRif <= knownRif ? unknown : cold >= 0 ? cold : hot;
    uses[chosen]!++;
    return pos[chosen]!;
  }

  /** Takes each slot's newer answer, if one came: a probe answer or a report carrying in-flight. */
  #refresh(reported: ReportedLoad): void {
    this.#seenChanges = reported.changes;
    const rows = reported.rows;
    const tracker = this.#tracker as LoadTracker;
    const own = tracker.inFlightCounts;
    const pos = this.#pos;
    const records = this.#record;
    const stamp = this.#stamp;
    let latest = this.#latestMs[0]!;
    for (let s = 0; s < pos.length; s++) {
      if (pos[s]! < 0) continue;
      const row = records[s]! * REPORT_STRIDE;
      // NaN: none yet.
      const probedAt = rows[row + PROBED_AT]!;
      const reportedAt = rows[row + REPORTED_AT]!;
      const since = stamp[s]!;
      if (reportedAt > since && !(reportedAt <= probedAt) && rows[row + REPORTED_RIF]! >= 0) {
        stamp[s] = reportedAt;
        this.#rif[s] = rows[row + REPORTED_RIF]!;
        const said = rows[row + REPORTED_LATENCY]!;
        const mine = tracker.averageAt(records[s]!);
        this.#latency[s] = said >= 0 ? said : mine > 0 ? mine : rows[row + PROBE_LATENCY]!;
      } else if (probedAt > since) {
        stamp[s] = probedAt;
        this.#rif[s] = rows[row + PROBE_RIF]!;
        this.#latency[s] = rows[row + PROBE_LATENCY]!;
      } else {
        continue;
      }
      if (stamp[s]! > latest) latest = stamp[s]!;
      this.#windowAnswers++;
      this.#uses[s] = 0;
      this.#ownAtAnswer[s] = own[records[s]!]!;
      this.#quantile.add(this.#rif[s]!);
    }
    this.#latestMs[0] = latest;
  }

  /**
   * The slot a newcomer takes: empty, else spent, else the oldest or the worst in turn. Empty
   * slots are looked for first, so probes sent before any answer arrived (the pool's clock still
   * at -∞) fill the pool instead of taking each other's slot.
   */
  #victim(nowMs: number): number {
    const pos = this.#pos;
    for (let s = 0; s < pos.length; s++) if ((pos[s] as number) < 0) return s;
    const maxAge = this.#o.maxProbeAgeMs;
    let oldest = 0;
    let oldestAt = Number.POSITIVE_INFINITY;
    for (let s = 0; s < pos.length; s++) {
      const lastNews = Math.max(this.#stamp[s] as number, this.#filledMs[s] as number);
      // NaN (no clock yet, no news yet) is not spent.
      if (nowMs - lastNews > maxAge || (this.#uses[s] as number) >= this.#maxUses) return s;
      if (lastNews < oldestAt) {
        oldestAt = lastNews;
        oldest = s;
      }
    }
    this.#evictWorst = !this.#evictWorst;
    return this.#evictWorst ? this.#worst() : oldest;
  }

  /** The hottest slot (highest RIF above the line), or when none is hot the slowest. */
  #worst(): number {
    const hotAbove = this.#quantile.threshold;
    let worst = 0;
    let worstRif = Number.NEGATIVE_INFINITY;
    let slowest = 0;
    let slowestLatency = Number.NEGATIVE_INFINITY;
    for (let s = 0; s < this.#pos.length; s++) {
      const rif = (this.#rif[s] as number) + (this.#uses[s] as number);
      if (rif > hotAbove && rif > worstRif) {
        worst = s;
        worstRif = rif;
      }
      if ((this.#latency[s] as number) > slowestLatency) {
        slowest = s;
        slowestLatency = this.#latency[s] as number;
      }
    }
    return worstRif > Number.NEGATIVE_INFINITY ? worst : slowest;
  }

  #clear(s: number): void {
    if ((this.#pos[s] as number) >= 0) this.#empty++;
    this.#keys[s] = undefined;
    this.#pos[s] = -1;
    this.#stamp[s] = Number.NEGATIVE_INFINITY;
    this.#uses[s] = 0;
  }
}
