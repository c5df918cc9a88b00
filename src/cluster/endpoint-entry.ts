/**
 * What a cluster keeps per endpoint beside the balancer's load record (its pools belong to the
 * transport): a sliding window of requests for the imbalance figures, and counters.
 */
import type { Endpoint } from '../core/endpoint.js';
import { SlidingCounter } from './sliding-counter.js';

/** Buckets in the stats window. */
export const WINDOW_BUCKETS = 10;

/** Per-endpoint state the cluster keeps beside the balancer's load record. */
export class EndpointEntry {
  endpoint: Endpoint;
  readonly window = new SlidingCounter(WINDOW_BUCKETS);
  connectionsOpened = 0;
  constructor(endpoint: Endpoint) {
    this.endpoint = endpoint;
  }
}
