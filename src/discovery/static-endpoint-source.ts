/**
 * A source whose endpoints the caller sets: `static:///` targets, tests, and programs that do
 * their own discovery. `update()` publishes a new set at once.
 *
 * @example
 * const source = new StaticEndpointSource([{ address: '127.0.0.1', port: 8080 }]);
 * source.update([{ address: '127.0.0.2', port: 8080, conditions: { ready: false } }]);
 */
import type { Endpoint, EndpointInput } from '../core/endpoint.js';
import { EndpointSet } from '../core/endpoint-set.js';
import { BaseEndpointSource } from './endpoint-source.js';

export class StaticEndpointSource extends BaseEndpointSource {
  constructor(endpoints: Iterable<EndpointInput | Endpoint> | EndpointSet = [], target = 'static') {
    super(target);
    this.update(endpoints);
  }

  /** Replaces the endpoint set. */
  update(endpoints: Iterable<EndpointInput | Endpoint> | EndpointSet): void {
    this.publishEndpoints(endpoints instanceof EndpointSet ? endpoints : EndpointSet.from(endpoints));
  }

  protected onClose(): void {}
}
