/**
 * The `evenlb` load-balancing policy for grpc-js channels. One subchannel per endpoint (a grpc-js
 * `LeafLoadBalancer`, which owns connecting, backoff and health); one evenlb `Balancer` picks
 * every call; `OutlierDetector` ejects endpoints whose calls keep failing.
 *
 * Endpoints and their conditions come from the evenlb resolver's snapshot attribute; with any
 * other resolver (grpc-js's `dns:///`) every resolved address is a ready endpoint. Only eligible
 * endpoints (ready; serving-and-terminating when none is ready) get a subchannel and calls. An
 * endpoint that leaves, turns not-ready or starts terminating gets no new call at once; its
 * subchannel is released when its last call ends. Endpoints whose subchannel is not READY are
 * excluded from the balancer's picks the way ejected ones are, so a call never waits on a
 * connecting or failed endpoint while another is connected.
 *
 * Connectivity reported to the channel: READY when any eligible endpoint is connected,
 * CONNECTING while some connect, TRANSIENT_FAILURE (with discovery's or the last connection
 * error) otherwise. A config that failed to parse fails every call with that error's text.
 */
import { Balancer } from '../balancing/balancer.js';
import { OutlierDetector } from '../balancing/outlier-detector.js';
import type { PickContext } from '../balancing/picker.js';
import type { ClusterObserver, RequestOutcome } from '../cluster/cluster-options.js';
import { EndpointEntry, WINDOW_BUCKETS } from '../cluster/endpoint-entry.js';
import type { Clock } from '../core/clock.js';
import { createEndpoint, type Endpoint } from '../core/endpoint.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { createRandom, type Random } from '../core/random.js';
import type { DiscoverySnapshot } from '../discovery/endpoint-source.js';
import { EvenlbLoadBalancingConfig, type GrpcBalancingConfig } from './balancing-config.js';
import { type CallTicket, CallTracker } from './call-tracker.js';
import { type ChannelStats, collectChannelStats } from './channel-stats.js';
import { type ConnectedEndpoint, EvenlbPicker } from './evenlb-picker.js';
import type {
  ChannelControlHelper,
  ChannelOptions,
  ConnectivityState,
  GrpcEndpoint,
  GrpcLoadBalancer,
  GrpcModule,
  GrpcPicker,
  LeafLoadBalancer,
  StatusOr,
  TypedLoadBalancingConfig,
} from './grpc-module.js';
import { SNAPSHOT_ATTRIBUTE, TARGET_ATTRIBUTE } from './grpc-resolver.js';

/** What every policy instance of one registration shares. */
export interface BalancerContext {
  readonly grpc: GrpcModule;
  readonly clock: Clock;
  readonly random: Random;
  readonly observer: ClusterObserver | undefined;
  /** Adds (true) or removes (false) a live policy from the registration's stats. */
  track(lb: EvenlbLoadBalancer, live: boolean): void;
}

interface Leaf {
  readonly key: string;
  readonly child: LeafLoadBalancer;
  state: ConnectivityState;
  picker: GrpcPicker;
  /** No longer eligible: released once nothing is in flight. */
  draining: boolean;
}

/** The running state built from one parsed config. */
interface Engine {
  readonly config: GrpcBalancingConfig;
  readonly fingerprint: string;
  readonly balancer: Balancer;
  readonly outlier: OutlierDetector | undefined;
  readonly tracker: CallTracker;
}

const isSnapshot = (v: unknown): v is DiscoverySnapshot =>
  typeof v === 'object' && v !== null && (v as DiscoverySnapshot).endpoints instanceof EndpointSet;

let channelCount = 0;

export class EvenlbLoadBalancer implements GrpcLoadBalancer {
  readonly #ctx: BalancerContext;
  readonly #helper: ChannelControlHelper;
  readonly #grpc: GrpcModule;
  readonly #random: Random;
  readonly #leaves = new Map<string, Leaf>();
  readonly #entries = new Map<string, EndpointEntry>();
  /** grpc-js endpoints as resolved (a non-evenlb resolver may give several addresses per endpoint). */
  #grpcEndpoints = new Map<string, GrpcEndpoint>();
  readonly #context: PickContext = {};
  readonly #fallbackName = `channel-${++channelCount}`;
  #engine: Engine | undefined;
  #set = EndpointSet.EMPTY;
  #eligible: ReadonlySet<string> = new Set();
  #discovery: ChannelStats['discovery'] = 'pending';
  #discoveryError: string | undefined;
  #target: string | undefined;
  #options: ChannelOptions = {};
  #note = '';
  #lastError = '';
  #paused = false;
  #destroyed = false;

  constructor(helper: ChannelControlHelper, ctx: BalancerContext) {
    this.#helper = helper;
    this.#ctx = ctx;
    this.#grpc = ctx.grpc;
    this.#random = createRandom(ctx.random.int(4294967296));
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
      const details = `evenlb: invalid load-balancing config: ${lbConfig.error?.message ?? 'unknown error'}`;
      this.#fail(details);
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
      this.#grpcEndpoints = new Map();
      this.#reconcile(snapshot.endpoints);
    } else if (endpointList.ok) {
      this.#discovery = 'ok';
      this.#discoveryError = resolutionNote === '' ? undefined : resolutionNote;
      this.#reconcile(this.#fromGrpcEndpoints(endpointList.value));
    } else {
      // A failed resolution keeps the last known endpoints; with none, calls fail with its status.
      this.#discoveryError = endpointList.error.details;
      if (this.#set.size === 0) this.#fail(endpointList.error.details);
    }
    return true;
  }

  exitIdle(): void {
    for (const leaf of this.#leaves.values()) if (!leaf.draining) leaf.child.exitIdle();
  }

  resetBackoff(): void {
    // Each leaf's subchannel keeps its own backoff.
  }

  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    for (const leaf of this.#leaves.values()) this.#release(leaf);
    this.#stopEngine();
    this.#ctx.track(this, false);
  }

  getTypeName(): string {
    return 'evenlb';
  }

  /** Stats in the shape of one `BalancedAgent` route. */
  stats(): ChannelStats {
    const engine = this.#engine;
    const connectivity = new Map<string, string>();
    for (const leaf of this.#leaves.values()) {
      connectivity.set(leaf.key, this.#grpc.connectivityState[leaf.state]?.toLowerCase() ?? 'unknown');
    }
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
      connectivity,
      ready: this.#grpc.connectivityState[this.#grpc.connectivityState.READY]?.toLowerCase() ?? 'ready',
    });
  }

  // ---- configuration and endpoints ----

  #useConfig(config: GrpcBalancingConfig, fingerprint: string): void {
    if (this.#engine?.fingerprint === fingerprint) return;
    this.#stopEngine();
    const clock = this.#ctx.clock;
    const balancer = new Balancer({
      policy: config.policy,
      policyOptions: config.policyOptions,
      clock,
      random: this.#random,
    });
    const outlier =
      config.outlierDetection === false
        ? undefined
        : new OutlierDetector(config.outlierDetection, {
            clock,
            onChange: () => this.#publish(),
            onEject: (key, ms) => this.#ctx.observer?.ejected?.(this.name, key, ms),
          });
    const tracker = new CallTracker(
      clock,
      config.statsWindowMs / WINDOW_BUCKETS,
      config.failureCodes,
      (ticket, outcome, durationMs) => this.#callEnded(ticket, outcome, durationMs),
      (ticket) => this.#releaseIfIdle(ticket.key),
    );
    this.#engine = { config, fingerprint, balancer, outlier, tracker };
    if (this.#set.size > 0) {
      balancer.update(this.#set);
      outlier?.setEndpoints(this.#set);
      this.#publish();
    }
  }

  #stopEngine(): void {
    this.#engine?.outlier?.close();
    this.#engine?.tracker.close();
  }

  #fromGrpcEndpoints(list: readonly GrpcEndpoint[]): EndpointSet {
    const endpoints: Endpoint[] = [];
    const byKey = new Map<string, GrpcEndpoint>();
    for (const ge of list) {
      const first = ge.addresses.find((a): a is { host: string; port: number } => 'host' in a && 'port' in a);
      if (first === undefined) continue; // unix-socket endpoints have no ip:port to balance by
      const e = createEndpoint({ address: first.host, port: first.port });
      endpoints.push(e);
      byKey.set(e.key, ge);
    }
    this.#grpcEndpoints = byKey;
    return new EndpointSet(endpoints);
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
        let entry = this.#entries.get(e.key);
        if (entry === undefined) {
          entry = new EndpointEntry(e);
          this.#entries.set(e.key, entry);
        } else entry.endpoint = e;
        const leaf = this.#leaves.get(e.key);
        if (leaf === undefined) this.#createLeaf(e);
        else leaf.draining = false;
      }
      this.#eligible = eligible;
      for (const leaf of [...this.#leaves.values()]) {
        if (eligible.has(leaf.key)) continue;
        leaf.draining = true;
        this.#releaseIfIdle(leaf.key);
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

  #createLeaf(endpoint: Endpoint): void {
    const E = this.#grpc.experimental;
    const grpcEndpoint = this.#grpcEndpoints.get(endpoint.key) ?? {
      addresses: [{ host: endpoint.address, port: endpoint.port }],
    };
    const holder: { leaf?: Leaf } = {};
    const helper = E.createChildChannelControlHelper(this.#helper, {
      updateState: (state, picker, error) => {
        if (holder.leaf !== undefined) this.#onLeafState(holder.leaf, state, picker, error);
      },
    });
    const child = new E.LeafLoadBalancer(grpcEndpoint, helper, this.#options, this.#note);
    const leaf: Leaf = {
      key: endpoint.key,
      child,
      state: this.#grpc.connectivityState.IDLE,
      picker: child.getPicker(),
      draining: false,
    };
    holder.leaf = leaf;
    this.#leaves.set(endpoint.key, leaf);
    child.startConnecting();
  }

  #onLeafState(leaf: Leaf, state: ConnectivityState, picker: GrpcPicker, error: string | null): void {
    if (this.#leaves.get(leaf.key) !== leaf || this.#destroyed) return;
    const READY = this.#grpc.connectivityState.READY;
    const was = leaf.state;
    leaf.state = state;
    leaf.picker = picker;
    if (error) this.#lastError = error;
    if (was !== READY && state === READY) this.#ctx.observer?.connectionOpened?.(this.name, leaf.key);
    if (was === READY && state !== READY) {
      this.#ctx.observer?.connectionClosed?.(this.name, leaf.key, 'peer');
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
    const leaf = this.#leaves.get(key);
    if (leaf?.draining && (this.#engine?.balancer.loads.peek(key)?.inFlight ?? 0) === 0) {
      this.#release(leaf);
    }
    this.#forgetIfGone(key);
  }

  #release(leaf: Leaf): void {
    this.#leaves.delete(leaf.key);
    if (leaf.state === this.#grpc.connectivityState.READY) {
      this.#ctx.observer?.connectionClosed?.(this.name, leaf.key, 'endpoint-removed');
    }
    leaf.child.destroy();
  }

  /** Drops stats for an endpoint discovery no longer knows, once nothing is left of it. */
  #forgetIfGone(key: string): void {
    if (this.#set.has(key) || this.#leaves.has(key)) return;
    if ((this.#engine?.balancer.loads.peek(key)?.inFlight ?? 0) > 0) return;
    this.#entries.delete(key);
  }

  // ---- what the channel sees ----

  #fail(details: string): void {
    const E = this.#grpc.experimental;
    this.#helper.updateState(
      this.#grpc.connectivityState.TRANSIENT_FAILURE,
      new E.UnavailablePicker({ code: this.#grpc.status.UNAVAILABLE, details }),
      details,
    );
  }

  #publish(): void {
    const engine = this.#engine;
    if (this.#paused || this.#destroyed || engine === undefined) return;
    const S = this.#grpc.connectivityState;
    this.#paused = true;
    try {
      for (const key of this.#eligible) {
        const leaf = this.#leaves.get(key);
        if (leaf?.state === S.IDLE) leaf.child.exitIdle();
      }
    } finally {
      this.#paused = false;
    }
    const excluded = new Set<string>(engine.outlier?.ejected ?? []);
    const connected = new Map<string, ConnectedEndpoint>();
    let connecting = 0;
    for (const key of this.#eligible) {
      const leaf = this.#leaves.get(key);
      const entry = this.#entries.get(key);
      if (leaf?.state === S.READY && entry !== undefined) {
        connected.set(key, { picker: leaf.picker, entry, load: engine.balancer.loads.get(key) });
        continue;
      }
      excluded.add(key);
      if (leaf === undefined || leaf.state === S.CONNECTING || leaf.state === S.IDLE) connecting++;
    }
    const current = engine.balancer.ejected;
    if (current.size !== excluded.size || [...excluded].some((k) => !current.has(k))) {
      engine.balancer.setEjected(excluded);
    }
    if (connected.size > 0) {
      const picker = new EvenlbPicker({
        grpc: this.#grpc,
        picker: engine.balancer.picker,
        connected,
        tracker: engine.tracker,
        hashHeader: engine.balancer.policy.kind === 'hash' ? engine.config.hashHeader : undefined,
        context: this.#context,
      });
      this.#helper.updateState(S.READY, picker, null);
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
