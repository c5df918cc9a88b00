/**
 * The picker the `evenlb` policy publishes to grpc-js. Each call is picked by evenlb's `Balancer`
 * picker (the same engine as the client, the proxy and the simulator); the chosen endpoint's
 * subchannel comes from its leaf's own picker, and the pick result carries the hooks that count
 * the call in the endpoint's load record (`CallTracker`).
 *
 * Immutable like grpc-js pickers: the policy publishes a new one whenever the endpoint set, a
 * subchannel's connectivity or an ejection changes. Hash policies hash the value of one call
 * metadata key (`hashHeader`); a call without it is placed at random.
 */

import type { EndpointLoad } from '../balancing/endpoint-load.js';
import { hashKey, type PickContext, type Picker } from '../balancing/picker.js';
import type { EndpointEntry } from '../cluster/endpoint-entry.js';
import type { CallTracker } from './call-tracker.js';
import type { GrpcModule, GrpcPicker, PickArgs, PickResult } from './grpc-module.js';

/** What the picker needs of one connected endpoint. */
export interface ConnectedEndpoint {
  readonly picker: GrpcPicker;
  readonly entry: EndpointEntry;
  /** The endpoint's load record (for fallback picks, which bypass the balancer). */
  readonly load: EndpointLoad;
}

export interface EvenlbPickerParts {
  readonly grpc: GrpcModule;
  /** evenlb's picker; it offers only connected endpoints (the others are excluded). */
  readonly picker: Picker;
  /** Connected endpoints by key. */
  readonly connected: ReadonlyMap<string, ConnectedEndpoint>;
  readonly tracker: CallTracker;
  /** Metadata key to hash, for hash policies only. */
  readonly hashHeader: string | undefined;
  /** Reused per pick (hash and exclusion); owned by the policy. */
  readonly context: PickContext;
}

export class EvenlbPicker implements GrpcPicker {
  readonly #parts: EvenlbPickerParts;
  readonly #complete: number;
  /** Connected keys, for the case the balancer offers nothing (every connected endpoint ejected). */
  readonly #fallback: readonly string[];
  #next = 0;

  constructor(parts: EvenlbPickerParts) {
    this.#parts = parts;
    this.#complete = parts.grpc.experimental.PickResultType.COMPLETE;
    this.#fallback = [...parts.connected.keys()];
  }

  pick(args: PickArgs): PickResult {
    const parts = this.#parts;
    const ctx = parts.context;
    if (parts.hashHeader !== undefined) {
      const values = args.metadata.get(parts.hashHeader);
      const v = values[0];
      ctx.hash = v === undefined ? undefined : hashKey(typeof v === 'string' ? v : v.toString('latin1'));
    }
    const picked = parts.picker.pick(ctx);
    let key: string;
    let connected: ConnectedEndpoint | undefined;
    let fellBack = false;
    if (picked.type === 'picked') {
      key = picked.endpoint.key;
      connected = parts.connected.get(key);
    } else {
      key = '';
    }
    if (connected === undefined) {
      // Outlier detection ejected every connected endpoint, or the pick's subchannel is not
      // connected (yet): keep serving on a connected one rather than fail or wait.
      key = this.#fallback[this.#next++ % this.#fallback.length] ?? '';
      connected = parts.connected.get(key);
      fellBack = true;
    }
    if (connected === undefined) {
      return {
        pickResultType: parts.grpc.experimental.PickResultType.QUEUE,
        subchannel: null,
        status: null,
        onCallStarted: null,
        onCallEnded: null,
      };
    }
    const inner = connected.picker.pick(args);
    if (inner.pickResultType !== this.#complete) return inner;
    const tracker = parts.tracker;
    const ticket = tracker.begin(
      key,
      picked.type === 'picked' && !fellBack ? picked.load : connected.load,
      connected.entry,
    );
    const innerStarted = inner.onCallStarted;
    const innerEnded = inner.onCallEnded;
    return {
      pickResultType: this.#complete,
      subchannel: inner.subchannel,
      status: null,
      onCallStarted:
        innerStarted === null
          ? () => tracker.started(ticket)
          : () => {
              tracker.started(ticket);
              innerStarted();
            },
      onCallEnded:
        innerEnded === null
          ? (code) => tracker.ended(ticket, code)
          : (code, details, metadata) => {
              tracker.ended(ticket, code);
              innerEnded(code, details, metadata);
            },
    };
  }
}
