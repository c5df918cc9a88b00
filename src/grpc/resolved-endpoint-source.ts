/**
 * The endpoint source of one gRPC channel's `Cluster`: what the channel's resolver delivered,
 * as the `evenlb` policy receives it from grpc-js. Behind an evenlb resolver that is the
 * discovery snapshot itself (conditions, zones, weights and status, mirrored as they are);
 * behind another resolver (grpc-js's `dns:///`, `ipv4:///`) every resolved address is a ready
 * endpoint. A failed resolution keeps the last known set (`degraded`), as every source does.
 */
import type { EndpointSet } from '../core/endpoint-set.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { BaseEndpointSource, type DiscoverySnapshot } from '../discovery/endpoint-source.js';

export class ResolvedEndpointSource extends BaseEndpointSource {
  /** Mirrors an evenlb resolver's snapshot (a pending one changes nothing). */
  deliver(snapshot: DiscoverySnapshot): void {
    const status = snapshot.status;
    if (status.state === 'ok') this.publishEndpoints(snapshot.endpoints);
    else if (status.state === 'degraded') this.publishFailure(status.error, snapshot.endpoints);
    else if (status.state === 'not-found') this.publishNotFound(status.error);
  }

  /** Another resolver's addresses, as ready endpoints. */
  resolved(endpoints: EndpointSet): void {
    this.publishEndpoints(endpoints);
  }

  /** Another resolver failed with `details`: the last known set stays. */
  failed(details: string): void {
    this.publishFailure(new EvenlbError(ErrorCodes.DISCOVERY_FAILED, `${this.target}: ${details}`));
  }

  protected onClose(): void {}
}
