/**
 * The `evenlb` load-balancing policy for grpc-js channels: one subchannel per eligible endpoint
 * (`EndpointSubchannels`), and one `Cluster` per channel config — the engine every transport
 * shares — fed with the endpoints the resolver delivered (`ResolvedEndpointSource`). Every call
 * is an attempt of that cluster (`EvenlbPicker`, `PickedCalls`): its picks, load records,
 * outlier detection, slow start, herding guard, zone routing, stats and metrics are the
 * cluster's. Endpoints and conditions come from the evenlb resolver's snapshot attribute;
 * behind another resolver every resolved address is a ready endpoint.
 *
 * An endpoint that leaves, turns not-ready or starts terminating gets no new call at once; its
 * subchannel is released when its last call ends. A call goes only to an endpoint whose
 * subchannel is connected, so no call waits on a connecting or failed endpoint while another is
 * connected. The channel sees READY when any eligible endpoint is connected, CONNECTING while
 * some connect, else TRANSIENT_FAILURE with discovery's or the last connection error. A config
 * that failed to parse fails every call with its error's text. A changed config builds a new
 * cluster; calls in flight finish on the old one's attempts.
 */
import { Cluster } from '../cluster/cluster.js';
import { type ClusterInternals, clusterInternals } from '../cluster/cluster-internals.js';
import type { ClusterObserver, ClusterOptions } from '../cluster/cluster-options.js';
import type { Clock } from '../core/clock.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { createRandom, type Random } from '../core/random.js';
import type { DiscoverySnapshot } from '../discovery/endpoint-source.js';
import { EvenlbLoadBalancingConfig, type GrpcBalancingConfig } from './balancing-config.js';
import { type ChannelStats, channelStats, emptyChannelStats } from './channel-stats.js';
import { type EndpointSubchannel, EndpointSubchannels } from './endpoint-subchannels.js';
import { EvenlbPicker } from './evenlb-picker.js';
import { fromGrpcEndpoints, grpcEndpointOf } from './grpc-endpoints.js';
import type {
  ChannelControlHelper,
  ChannelOptions,
  ConnectivityState,
  GrpcEndpoint,
  GrpcLoadBalancer,
  GrpcModule,
  GrpcPicker,
  StatusOr,
  TypedLoadBalancingConfig,
} from './grpc-module.js';
import { SNAPSHOT_ATTRIBUTE, TARGET_ATTRIBUTE } from './grpc-resolver.js';
import { PickedCalls } from './picked-calls.js';
import { ResolvedEndpointSource } from './resolved-endpoint-source.js';

/** What every `evenlb` policy instance of one registration shares. */
export interface PolicyContext {
  readonly grpc: GrpcModule;
  readonly clock: Clock;
  readonly random: Random;
  readonly observer: ClusterObserver | undefined;
  /** Adds (true) or removes (false) a live policy from the registration's stats. */
  track(lb: { stats(): ChannelStats }, live: boolean): void;
}

/** What one parsed config runs on. */
interface ChannelEngine {
  readonly config: GrpcBalancingConfig;
  /** The raw config's text: an unchanged config keeps its engine. */
  readonly fingerprint: string;
  readonly cluster: Cluster;
  readonly internals: ClusterInternals;
  readonly calls: PickedCalls;
  readonly stopListening: () => void;
}

const isSnapshot = (v: unknown): v is DiscoverySnapshot =>
  typeof v === 'object' && v !== null && (v as DiscoverySnapshot).endpoints instanceof EndpointSet;

/** The cluster settings of a gRPC config (the fields it shares with a BalancedAgent route). */
const SETTINGS = [
  'policyOptions',
  'outlierDetection',
  'slowStartMs',
  'slowStartAggression',
  'slowStartMinWeightPercent',
  'herdingGuard',
  'zoneRouting',
  'pushback',
] as const;

let channelCount = 0;

export class EvenlbLoadBalancer implements GrpcLoadBalancer {
  readonly #ctx: PolicyContext;
  readonly #helper: ChannelControlHelper;
  readonly #grpc: GrpcModule;
  readonly #random: Random;
  readonly #subchannels: EndpointSubchannels;
  /** grpc-js endpoints as another resolver gave them (several addresses per endpoint). */
  #resolved: ReadonlyMap<string, GrpcEndpoint> = new Map();
  readonly #fallbackName = `channel-${++channelCount}`;
  #source: ResolvedEndpointSource | undefined;
  #engine: ChannelEngine | undefined;
  #eligible: ReadonlySet<string> = new Set();
  #discoveryError: string | undefined;
  #target: string | undefined;
  #options: ChannelOptions = {};
  #note = '';
  #lastError = '';
  #paused = false;
  /** Inside `#publish`: the Balancer's own picker events are already being handled. */
  #publishing = false;
  #destroyed = false;

  constructor(helper: ChannelControlHelper, ctx: PolicyContext) {
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
    return this.#engine?.cluster.name ?? this.#target ?? this.#fallbackName;
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
    this.#options = options;
    this.#note = resolutionNote;
    const target = options[TARGET_ATTRIBUTE];
    if (typeof target === 'string') this.#target = target;
    this.#source ??= new ResolvedEndpointSource(this.#target ?? lbConfig.config.name ?? this.#fallbackName);
    const source = this.#source;
    this.#paused = true;
    try {
      this.#useConfig(lbConfig.config, lbConfig.fingerprint, source);
      const snapshot = options[SNAPSHOT_ATTRIBUTE];
      if (isSnapshot(snapshot)) {
        this.#discoveryError = 'error' in snapshot.status ? snapshot.status.error.message : undefined;
        this.#resolved = new Map();
        source.deliver(snapshot);
      } else if (endpointList.ok) {
        this.#discoveryError = resolutionNote === '' ? undefined : resolutionNote;
        const { set, byKey } = fromGrpcEndpoints(endpointList.value);
        this.#resolved = byKey;
        source.resolved(set);
      } else {
        // A failed resolution keeps the last known endpoints; with none, calls fail with its status.
        this.#discoveryError = endpointList.error.details;
        source.failed(endpointList.error.details);
        if (source.snapshot().endpoints.size === 0) {
          this.#paused = false;
          this.#fail(endpointList.error.details);
          return true;
        }
      }
      this.#reconcile(source.snapshot().endpoints);
    } finally {
      this.#paused = false;
    }
    this.#publish();
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
    if (this.#engine !== undefined) this.#stop(this.#engine);
    void this.#source?.close();
    this.#ctx.track(this, false);
  }

  getTypeName(): string {
    return 'evenlb';
  }

  /** Stats in the shape of one `BalancedAgent` route: the channel cluster's, with connectivity. */
  stats(): ChannelStats {
    const engine = this.#engine;
    if (engine === undefined) return emptyChannelStats(this.name, this.#target ?? this.name);
    return channelStats(engine.cluster.stats(), this.#subchannels.connectivity());
  }

  // ---- configuration and endpoints ----

  #useConfig(config: GrpcBalancingConfig, fingerprint: string, source: ResolvedEndpointSource): void {
    const old = this.#engine;
    if (old?.fingerprint === fingerprint) return;
    const settings: Record<string, unknown> = {};
    for (const key of SETTINGS) if (config[key] !== undefined) settings[key] = config[key];
    const ctx = this.#ctx;
    const cluster = new Cluster({
      ...settings,
      name: config.name ?? this.#target ?? this.#fallbackName,
      target: source,
      policy: config.policy,
      statsWindowMs: config.statsWindowMs,
      // gRPC servers answer HTTP/1.1 load probes only on a port of their own: off unless configured.
      loadProbes: config.loadProbes ?? false,
      clock: ctx.clock,
      random: this.#random,
      ...(ctx.observer === undefined ? {} : { observer: ctx.observer }),
    } as ClusterOptions);
    const internals = clusterInternals(cluster);
    const calls = new PickedCalls(internals, ctx.clock, config.failureCodes, (key) => this.#releaseIfIdle(key));
    // The balancer publishes pickers on its own too (ejections, slow-start ramps): calls queued
    // for a connected endpoint get picked again on the fresh grpc-js picker.
    const stopListening = internals.balancer.onPicker(() => this.#publish());
    this.#engine = { config, fingerprint, cluster, internals, calls, stopListening };
    if (old === undefined) return;
    this.#stop(old);
    const READY = this.#grpc.connectivityState.READY;
    for (const sub of this.#subchannels.values()) if (sub.state === READY) internals.adoptConnection(sub.key);
  }

  /** An engine's end: unstarted picks withdrawn, the cluster closed (calls in flight still end on it). */
  #stop(engine: ChannelEngine): void {
    engine.stopListening();
    engine.calls.close();
    void engine.cluster.close();
  }

  #reconcile(set: EndpointSet): void {
    const eligible = new Set<string>();
    for (const e of set.eligible()) {
      eligible.add(e.key);
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
  }

  #onSubchannel(sub: EndpointSubchannel, previous: ConnectivityState, error: string | null): void {
    if (this.#destroyed) return;
    const READY = this.#grpc.connectivityState.READY;
    if (error) this.#lastError = error;
    const internals = this.#engine?.internals;
    if (previous !== READY && sub.state === READY) internals?.noteConnection(sub.key, 'opened');
    if (previous === READY && sub.state !== READY) {
      internals?.noteConnection(sub.key, 'closed', 'peer');
      // Let the resolver re-deliver (grpc-js's own resolvers only notice changes this way).
      this.#helper.requestReresolution();
    }
    this.#publish();
  }

  /** Releases a draining endpoint's subchannel once nothing is in flight on it. */
  #releaseIfIdle(key: string): void {
    const sub = this.#subchannels.get(key);
    if (sub === undefined || !sub.draining) return;
    if ((this.#engine?.internals.balancer.loads.peek(key)?.inFlight ?? 0) === 0) this.#release(sub);
  }

  #release(sub: EndpointSubchannel): void {
    if (this.#subchannels.release(sub)) this.#engine?.internals.noteConnection(sub.key, 'closed', 'endpoint-removed');
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
    const set = engine.internals.balancer.endpointSet;
    if (subs.length > 0) {
      const connected = new Map<string, GrpcPicker>();
      for (const sub of subs) connected.set(sub.key, sub.picker);
      const { internals, calls, config } = engine;
      const hashHeader = internals.balancer.policy.kind === 'hash' ? config.hashHeader : undefined;
      const picker = new EvenlbPicker({ grpc: this.#grpc, cluster: internals, calls, connected, hashHeader });
      this.#helper.updateState(S.READY, picker, null);
    } else if (set.size === 0 || this.#eligible.size === 0) {
      const why = set.size === 0 ? 'discovery knows no endpoint' : 'no endpoint is ready';
      this.#fail(`evenlb ${this.name}: ${this.#discoveryError ?? why}`);
    } else if (connecting > 0) {
      this.#helper.updateState(S.CONNECTING, new this.#grpc.experimental.QueuePicker(this), null);
    } else {
      this.#fail(`evenlb ${this.name}: no endpoint is reachable; last error: ${this.#lastError || 'none'}`);
    }
  }
}
