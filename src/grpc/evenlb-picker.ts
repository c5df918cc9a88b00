/**
 * The picker the `evenlb` policy publishes to grpc-js. Every call takes an attempt from the
 * channel's `Cluster` — the balancer, load records, outlier detection and stats every other
 * transport uses — among the endpoints whose subchannel is connected
 * (`ClusterInternals.acquireUsable`: the balancer's pick, else the balancer asked again
 * without it; nothing picks around it). The chosen endpoint's subchannel comes from its
 * leaf's own picker, and the pick result carries the hooks that start and end the call's
 * attempt (`PickedCalls`).
 *
 * Immutable like grpc-js pickers: the policy publishes a new one whenever the endpoint set, a
 * subchannel's connectivity or the balancer's picker changes. When the balancer offers only
 * endpoints that are not connected yet, calls wait in grpc-js's queue for the next picker; when
 * it offers none (every endpoint ejected, none ready), they fail with UNAVAILABLE naming why.
 * Hash policies hash the value of one call-metadata key (`hashHeader`); a call without it is
 * placed at random.
 */
import { hashKey } from '../balancing/picker.js';
import type { ClusterInternals } from '../cluster/cluster-internals.js';
import { EvenlbError } from '../core/errors.js';
import type { GrpcModule, GrpcPicker, PickArgs, PickResult } from './grpc-module.js';
import type { PickedCalls } from './picked-calls.js';

export interface EvenlbPickerParts {
  readonly grpc: GrpcModule;
  /** The channel's cluster. */
  readonly cluster: ClusterInternals;
  readonly calls: PickedCalls;
  /** The subchannel picker of each connected endpoint, by key. */
  readonly connected: ReadonlyMap<string, GrpcPicker>;
  /** Metadata key to hash, for hash policies only. */
  readonly hashHeader: string | undefined;
}

export class EvenlbPicker implements GrpcPicker {
  readonly #parts: EvenlbPickerParts;
  readonly #complete: number;
  readonly #usable: (endpointKey: string) => boolean;

  constructor(parts: EvenlbPickerParts) {
    this.#parts = parts;
    this.#complete = parts.grpc.experimental.PickResultType.COMPLETE;
    const connected = parts.connected;
    this.#usable = (key) => connected.has(key);
  }

  pick(args: PickArgs): PickResult {
    const parts = this.#parts;
    let hash: number | undefined;
    if (parts.hashHeader !== undefined) {
      const v = args.metadata.get(parts.hashHeader)[0];
      if (v !== undefined) hash = hashKey(typeof v === 'string' ? v : v.toString('latin1'));
    }
    const attempt = parts.cluster.acquireUsable(this.#usable, hash);
    if (attempt === undefined) return this.#queue();
    if (attempt instanceof EvenlbError) {
      return new parts.grpc.experimental.UnavailablePicker({
        code: parts.grpc.status.UNAVAILABLE,
        details: attempt.message,
      }).pick(args);
    }
    const inner = (parts.connected.get(attempt.endpoint.key) as GrpcPicker).pick(args);
    if (inner.pickResultType !== this.#complete) {
      attempt.withdraw();
      return inner;
    }
    const calls = parts.calls;
    const call = calls.picked(attempt);
    const innerStarted = inner.onCallStarted;
    const innerEnded = inner.onCallEnded;
    return {
      pickResultType: this.#complete,
      subchannel: inner.subchannel,
      status: null,
      onCallStarted:
        innerStarted === null
          ? () => calls.started(call)
          : () => {
              calls.started(call);
              innerStarted();
            },
      onCallEnded:
        innerEnded === null
          ? (code, _details, metadata) => calls.ended(call, code, metadata)
          : (code, details, metadata) => {
              calls.ended(call, code, metadata);
              innerEnded(code, details, metadata);
            },
    };
  }

  #queue(): PickResult {
    return {
      pickResultType: this.#parts.grpc.experimental.PickResultType.QUEUE,
      subchannel: null,
      status: null,
      onCallStarted: null,
      onCallEnded: null,
    };
  }
}
