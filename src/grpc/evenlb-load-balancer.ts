/**
 * The `evenlb` load-balancing policy for grpc-js channels: one subchannel per eligible endpoint
 * (`EndpointSubchannels`), every call picked by evenlb's `Balancer`, failing endpoints ejected by
 * `OutlierDetector` (`BalancingEngine`). Endpoints and conditions come from the evenlb resolver's
 * snapshot attribute; behind another resolver every resolved address is a ready endpoint.
 *
 * An endpoint that leaves, turns not-ready or starts terminating gets no new call at once; its
 * subchannel is released when its last call ends. A call picked for an endpoint whose subchannel
 * is not READY goes to a connected endpoint instead (round-robin), so no call waits on a
 * connecting or failed endpoint while another is connected. The channel sees READY when any eligible endpoint is connected,
 * CONNECTING while some connect, else TRANSIENT_FAILURE with discovery's or the last connection
 * error. A config that failed to parse fails every call with its error's text.
 */ import type { PickContext } from '../balancing/picker.js';
import type { RequestOutcome } from '../cluster/cluster-options.js';
import { EndpointEntry } from '../cluster/endpoint-entry.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { createRandom, type Random } from '../core/random.js';
import type { DiscoverySnapshot } from '../discovery/endpoint-source.js';
import { EvenlbLoadBalancingConfig, type GrpcBalancingConfig } from './balancing-config.js';
import { type BalancerContext, type BalancingEngine, createEngine } from './balancing-engine.js';
import type { CallTicket } from './call-tracker.js';
import { type ChannelStats, collectChannelStats } from './channel-stats.js';
import { type EndpointSubchannel, EndpointSubchannels } from './endpoint-subchannels.js';
import { type ConnectedEndpoint, EvenlbPicker } from './evenlb-picker.js';
import { fromGrpcEndpoints, grpcEndpointOf } from './grpc-endpoints.js';
import type {
  ChannelControlHelper,
  ChannelOptions,
  ConnectivityState,
  GrpcEndpoint,
  GrpcLoadBalancer,
  GrpcModule,
  StatusOr,
  TypedLoadBalancingConfig,
} from './grpc-module.js';
import { SNAPSHOT_ATTRIBUTE, TARGET_ATTRIBUTE } from './grpc-resolver.js';

const isSnapshot = (v: unknown): v is DiscoverySnapshot =>
  typeof v === 'object' && v !== null && (v as DiscoverySnapshot).endpoints instanceof EndpointSet;

let channelCount = 0;

export class EvenlbLoadBalancer implements GrpcLoadBalancer {
  readonly #ctx: BalancerContext;
  readonly #helper: ChannelControlHelper;
  readonly #grpc: GrpcModule;
  readonly #random: Random;
  readonly #subchannels: EndpointSubchannels;
  /** Per-endpoint stats (window counts), kept while an endpoint is known or busy. */
  readonly #entries = new Map<string, EndpointEntry>();
  /** grpc-js endpoints as another resolver gave them (several addresses per endpoint). */
  #resolved: ReadonlyMap<string, GrpcEndpoint> = new Map();
  readonly #context: PickContext = {};
  readonly #fallbackName = `channel-${++channelCount}`;
  #engine: BalancingEngine | undefined;
  #set = EndpointSet.EMPTY;
  #eligible: ReadonlySet<string> = new Set();
  #discovery: ChannelStats['discovery'] = 'pending';
  #discoveryError: string | undefined;
  #target: string | undefined;
  #options: ChannelOptions = {};
  #note = '';
  #lastError = '';
  #paused = false;
  /** Inside `#publish`: the Balancer's own picker events are already being handled. */
  #publishing = false;
  #destroyed = false;

  constructor(helper: ChannelControlHelper, ctx: BalancerContext) {
    this.#helper = helper;
    this.#ctx = ctx;
    this.#grpc = ctx.grpc;
    this.#random = createRandom(ctx.random.int(4294967296));
    this.#subchannels = new EndpointSubchannels(ctx.grpc, helper, (sub, previous, error) =>
      this.#onSubchannel(sub, previous, error),
    );
    ctx.track(this, true);
  }

  /** The channel's name in stats and metrics: the config's `name`, else the target URI. */
  get name(): string {
    return this.#engine?.config.name ?? this.#target ?? this.#fallbackName;
  }

  updateAddressList(
    endpointList: StatusOr<GrpcEndpoint[]>,
    lbConfig: TypedLoadBalancingConfig,
    options: ChannelOptions,
    resolutionNote: string,
  ): boolean {
    if (!(lbConfig instanceof EvenlbLoadBalancingConfig) || this.#destroyed) return false;
    if (lbConfig.config === undefined) {
      this.#fail(`evenlb: invalid load-balancing config: ${lbConfig.error?.message ?? 'unknown error'}`);
      return true;
    }
    this.#useConfig(lbConfig.config, lbConfig.fingerprint);
    this.#options = options;
    this.#note = resolutionNote;
    const target = options[TARGET_ATTRIBUTE];
    if (typeof target === 'string') this.#target = target;
    const snapshot = options[SNAPSHOT_ATTRIBUTE];
    if (isSnapshot(snapshot)) {
      this.#discovery = snapshot.status.state;
      this.#discoveryError = 'error' in snapshot.status ? snapshot.status.error.message : undefined;
      this.#resolved = new Map();
      this.#reconcile(snapshot.endpoints);
    } else if (endpointList.ok) {
      this.#discovery = 'ok';
      this.#discoveryError = resolutionNote === '' ? undefined : resolutionNote;
      const { set, byKey } = fromGrpcEndpoints(endpointList.value);
      this.#resolved = byKey;
      this.#reconcile(set);
    } else {
      // A failed resolution keeps the last known endpoints; with none, calls fail with its status.
      this.#discoveryError = endpointList.error.details;
      if (this.#set.size === 0) this.#fail(endpointList.error.details);
    }
    return true;
  }

  exitIdle(): void {
    for (const sub of this.#subchannels.values()) if (!sub.draining) sub.child.exitIdle();
  }

  /** Each subchannel keeps its own backoff. */
  resetBackoff(): void {}

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    for (const sub of this.#subchannels.values()) this.#release(sub);
    this.#engine?.stop();
    this.#ctx.track(this, false);
  }

  getTypeName(): string {
    return 'evenlb';
  }

  /** Stats in the shape of one `BalancedAgent` route. */
  stats(): ChannelStats {
    const engine = this.#engine;
    const S = this.#grpc.connectivityState;
    return collectChannelStats({
      name: this.name,
      target: this.#target ?? this.name,
      policy: engine?.balancer.policy.name ?? 'none',
      discovery: this.#discovery,
      requests: engine?.tracker.requests ?? 0,
      windowMs: engine?.config.statsWindowMs ?? 60_000,
      nowMs: this.#ctx.clock.now(),
      balancer: engine?.balancer,
      outlier: engine?.outlier,
      entries: this.#entries,
      connectivity: this.#subchannels.connectivity(),
      ready: S[S.READY]?.toLowerCase() ?? 'ready',
    });
  }

  // ---- configuration and endpoints ----

  #useConfig(config: GrpcBalancingConfig, fingerprint: string): void {
    if (this.#engine?.fingerprint === fingerprint) return;
    this.#engine?.stop();
    const engine = createEngine(config, fingerprint, this.#ctx.clock, this.#random, {
      ejectedChanged: () => this.#publish(),
      ejected: (key, ms) => this.#ctx.observer?.ejected?.(this.name, key, ms),
      callEnded: (ticket, outcome, ms) => this.#callEnded(ticket, outcome, ms),
      pickWithdrawn: (ticket) => this.#releaseIfIdle(ticket.key),
      // Pickers published while this policy is itself publishing are picked up by that call.
      pickerChanged: () => this.#publish(),
    });
    this.#engine = engine;
    if (this.#set.size > 0) {
      engine.balancer.update(this.#set);
      engine.outlier?.setEndpoints(this.#set);
      this.#publish();
    }
  }

  #reconcile(set: EndpointSet): void {
    const engine = this.#engine;
    if (engine === undefined) return;
    this.#set = set;
    engine.balancer.update(set);
    engine.outlier?.setEndpoints(set);
    const eligible = new Set<string>();
    this.#paused = true;
    try {
      for (const e of set.eligible()) {
        eligible.add(e.key);
        if (!this.#entries.has(e.key)) this.#entries.set(e.key, new EndpointEntry(e));
        const sub = this.#subchannels.get(e.key);
        if (sub === undefined)
          this.#subchannels.open(e.key, grpcEndpointOf(e, this.#resolved), this.#options, this.#note);
        else sub.draining = false;
      }
      this.#eligible = eligible;
      for (const sub of this.#subchannels.values()) {
        if (eligible.has(sub.key)) continue;
        sub.draining = true;
        this.#releaseIfIdle(sub.key);
      }
      for (const [key, entry] of this.#entries) {
        const now = set.get(key);
        if (now !== undefined) entry.endpoint = now;
        this.#forgetIfGone(key);
      }
    } finally {
      this.#paused = false;
    }
    this.#publish();
  }

  #onSubchannel(sub: EndpointSubchannel, previous: ConnectivityState, error: string | null): void {
    if (this.#destroyed) return;
    const READY = this.#grpc.connectivityState.READY;
    if (error) this.#lastError = error;
    if (previous !== READY && sub.state === READY) this.#ctx.observer?.connectionOpened?.(this.name, sub.key);
    if (previous === READY && sub.state !== READY) {
      this.#ctx.observer?.connectionClosed?.(this.name, sub.key, 'peer');
      // Let the resolver re-deliver (grpc-js's own resolvers only notice changes this way).
      this.#helper.requestReresolution();
    }
    this.#publish();
  }

  #callEnded(ticket: CallTicket, outcome: RequestOutcome, ms: number): void {
    if (outcome !== 'aborted') this.#engine?.outlier?.record(ticket.key, outcome === 'success');
    this.#ctx.observer?.requestEnded?.(this.name, ticket.key, outcome, ms);
    this.#releaseIfIdle(ticket.key);
  }

  /** Releases a draining endpoint's subchannel once nothing is in flight on it. */
  #releaseIfIdle(key: string): void {
    const sub = this.#subchannels.get(key);
    if (sub?.draining && (this.#engine?.balancer.loads.peek(key)?.inFlight ?? 0) === 0) this.#release(sub);
    this.#forgetIfGone(key);
  }

  #release(sub: EndpointSubchannel): void {
    if (this.#subchannels.release(sub)) this.#ctx.observer?.connectionClosed?.(this.name, sub.key, 'endpoint-removed');
  }

  /** Drops stats for an endpoint discovery no longer knows, once nothing is left of it. */
  #forgetIfGone(key: string): void {
    if (this.#set.has(key) || this.#subchannels.has(key)) return;
    if ((this.#engine?.balancer.loads.peek(key)?.inFlight ?? 0) > 0) return;
    this.#entries.delete(key);
  }

  #fail(details: string): void {
    const { experimental, connectivityState, status } = this.#grpc;
    const picker = new experimental.UnavailablePicker({ code: status.UNAVAILABLE, details });
    this.#helper.updateState(connectivityState.TRANSIENT_FAILURE, picker, details);
  }

  /** Publishes a fresh picker and connectivity after any change. */
  #publish(): void {
    if (this.#publishing) return;
    this.#publishing = true;
    try {
      this.#publishNow();
    } finally {
      this.#publishing = false;
    }
  }

  #publishNow(): void {
    const engine = this.#engine;
    if (this.#paused || this.#destroyed || engine === undefined) return;
    const S = this.#grpc.connectivityState;
    this.#paused = true; // waking a subchannel reports its state change synchronously
    try {
      this.#subchannels.wakeIdle(this.#eligible);
    } finally {
      this.#paused = false;
    }
    const { connected: subs, connecting } = this.#subchannels.survey(this.#eligible);
    // Only outlier ejection reaches the Balancer: connectivity is not readiness (a subchannel's
    // first connect must not read as a pod joining — slow start, herding guard). A pick of an
    // endpoint whose subchannel is not connected moves to a connected one in the picker.
    const excluded = new Set<string>(engine.outlier?.ejected ?? []);
    const connected = new Map<string, ConnectedEndpoint>();
    for (const sub of subs) {
      const entry = this.#entries.get(sub.key);
      if (entry !== undefined)
        connected.set(sub.key, { picker: sub.picker, entry, load: engine.balancer.loads.get(sub.key) });
    }
    const current = engine.balancer.ejected;
    if (current.size !== excluded.size || [...excluded].some((k) => !current.has(k))) {
      engine.balancer.setEjected(excluded);
    }
    if (connected.size > 0) {
      const hashHeader = engine.balancer.policy.kind === 'hash' ? engine.config.hashHeader : undefined;
      const { balancer, tracker } = engine;
      const parts = {
        grpc: this.#grpc,
        picker: balancer.picker,
        connected,
        tracker,
        hashHeader,
        context: this.#context,
      };
      this.#helper.updateState(S.READY, new EvenlbPicker(parts), null);
    } else if (this.#set.size === 0 || this.#eligible.size === 0) {
      const why = this.#set.size === 0 ? 'discovery knows no endpoint' : 'no endpoint is ready';
      this.#fail(`evenlb ${this.name}: ${this.#discoveryError ?? why}`);
    } else if (connecting > 0) {
      this.#helper.updateState(S.CONNECTING, new this.#grpc.experimental.QueuePicker(this), null);
    } else {
      this.#fail(`evenlb ${this.name}: no endpoint is reachable; last error: ${this.#lastError || 'none'}`);
    }
  }
}
