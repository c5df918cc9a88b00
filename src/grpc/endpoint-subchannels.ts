/**
 * The subchannels of one `evenlb` policy: one grpc-js `LeafLoadBalancer` per endpoint key. A leaf
 * owns its subchannel's connecting, backoff and keepalive (grpc-js's pick-first on one endpoint);
 * this class keeps its latest connectivity and picker, marks it draining when its endpoint stops
 * being eligible, and destroys it on release (dropping the subchannel reference; grpc-js's
 * subchannel pool closes the connection on its next sweep).
 */
import type {
  ChannelControlHelper,
  ChannelOptions,
  ConnectivityState,
  GrpcEndpoint,
  GrpcModule,
  GrpcPicker,
  LeafLoadBalancer,
} from './grpc-module.js';

/** One endpoint's subchannel. */
export interface EndpointSubchannel {
  readonly key: string;
  readonly child: LeafLoadBalancer;
  state: ConnectivityState;
  picker: GrpcPicker;
  /** No longer eligible: released once nothing is in flight on it. */
  draining: boolean;
}

/** Called after a subchannel's connectivity changed (its record already updated). */
export type SubchannelChanged = (sub: EndpointSubchannel, previous: ConnectivityState, error: string | null) => void;

export class EndpointSubchannels {
  readonly #grpc: GrpcModule;
  readonly #helper: ChannelControlHelper;
  readonly #changed: SubchannelChanged;
  readonly #byKey = new Map<string, EndpointSubchannel>();

  constructor(grpc: GrpcModule, helper: ChannelControlHelper, changed: SubchannelChanged) {
    this.#grpc = grpc;
    this.#helper = helper;
    this.#changed = changed;
  }

  get(key: string): EndpointSubchannel | undefined {
    return this.#byKey.get(key);
  }

  has(key: string): boolean {
    return this.#byKey.has(key);
  }

  values(): EndpointSubchannel[] {
    return [...this.#byKey.values()];
  }

  /** Creates the subchannel of `key` for `endpoint` and starts connecting. */
  open(key: string, endpoint: GrpcEndpoint, options: ChannelOptions, resolutionNote: string): EndpointSubchannel {
    const E = this.#grpc.experimental;
    const holder: { sub?: EndpointSubchannel } = {};
    const helper = E.createChildChannelControlHelper(this.#helper, {
      updateState: (state, picker, error) => {
        const sub = holder.sub;
        if (sub === undefined || this.#byKey.get(key) !== sub) return;
        const previous = sub.state;
        sub.state = state;
        sub.picker = picker;
        this.#changed(sub, previous, error);
      },
    });
    const child = new E.LeafLoadBalancer(endpoint, helper, options, resolutionNote);
    const sub: EndpointSubchannel = {
      key,
      child,
      state: this.#grpc.connectivityState.IDLE,
      picker: child.getPicker(),
      draining: false,
    };
    holder.sub = sub;
    this.#byKey.set(key, sub);
    child.startConnecting();
    return sub;
  }

  /** Destroys the subchannel; returns true when it was connected. */
  release(sub: EndpointSubchannel): boolean {
    if (this.#byKey.get(sub.key) !== sub) return false;
    this.#byKey.delete(sub.key);
    sub.child.destroy();
    return sub.state === this.#grpc.connectivityState.READY;
  }

  /** Starts connecting the idle subchannels of `keys` (their state changes are reported at once). */
  wakeIdle(keys: Iterable<string>): void {
    const IDLE = this.#grpc.connectivityState.IDLE;
    for (const key of keys) {
      const sub = this.#byKey.get(key);
      if (sub?.state === IDLE) sub.child.exitIdle();
    }
  }

  /**
   * Where the subchannels of `keys` stand: the connected ones, the keys of the others, and how
   * many of those are still connecting (or idle, about to).
   */
  survey(keys: Iterable<string>): { connected: EndpointSubchannel[]; notConnected: string[]; connecting: number } {
    const S = this.#grpc.connectivityState;
    const connected: EndpointSubchannel[] = [];
    const notConnected: string[] = [];
    let connecting = 0;
    for (const key of keys) {
      const sub = this.#byKey.get(key);
      if (sub?.state === S.READY) {
        connected.push(sub);
        continue;
      }
      notConnected.push(key);
      if (sub === undefined || sub.state === S.CONNECTING || sub.state === S.IDLE) connecting++;
    }
    return { connected, notConnected, connecting };
  }

  /** Lower-case connectivity per key (`ready`, `connecting`, `idle`, `transient_failure`). */
  connectivity(): Map<string, string> {
    const names = this.#grpc.connectivityState;
    const out = new Map<string, string>();
    for (const sub of this.#byKey.values()) out.set(sub.key, names[sub.state]?.toLowerCase() ?? 'unknown');
    return out;
  }
}
