/**
 * One factory from target URI to `EndpointSource`, dispatching on the scheme: `static:///`,
 * `file:///` and `dns:///` are built in; other schemes (`k8s:///`) are registered by their
 * module with `registerEndpointSourceFactory`, so this file never imports the Kubernetes
 * client. Options are handed to the factory of the scheme (`{ dns: {...} }`, `{ file: {...} }`,
 * `{ kubernetes: {...} }`), plus a shared `clock`.
 *
 * @example
 * const source = createEndpointSource('dns:///webhook.policy.svc.cluster.local:8443', { dns: { refreshIntervalMs: 5_000 } });
 * await source.ready();
 */
import type { Clock } from '../core/clock.js';
import { ErrorCodes, EvenlbError } from '../core/errors.js';
import { parseTarget, type Target, type TargetScheme } from '../core/target.js';
import { DnsEndpointSource } from './dns-endpoint-source.js';
import type { EndpointSource } from './endpoint-source.js';
import { FileEndpointSource } from './file-endpoint-source.js';
import { StaticEndpointSource } from './static-endpoint-source.js';

/** Options for `createEndpointSource`; each scheme reads its own key. */
export interface EndpointSourceOptions {
  readonly clock?: Clock;
  /** `DnsEndpointSource` options (without `host`/`port`). */
  readonly dns?: Record<string, unknown>;
  /** `FileEndpointSource` options (without `path`). */
  readonly file?: Record<string, unknown>;
  /** Options for the `k8s:///` source. */
  readonly kubernetes?: unknown;
  readonly [key: string]: unknown;
}

/** Builds a source for a parsed target of the scheme it is registered for. */
export type EndpointSourceFactory = (target: Target, options: EndpointSourceOptions) => EndpointSource;

const factories = new Map<TargetScheme, EndpointSourceFactory>();

/**
 * Registers (or replaces) the factory for a scheme. The Kubernetes discovery module registers
 * `k8s` this way.
 */
export function registerEndpointSourceFactory(scheme: TargetScheme, factory: EndpointSourceFactory): void {
  factories.set(scheme, factory);
}

/**
 * Creates the endpoint source for `target`. Throws `EVENLB_INVALID_TARGET` for a malformed
 * URI or a scheme no module has registered.
 */
export function createEndpointSource(target: string, options: EndpointSourceOptions = {}): EndpointSource {
  const parsed = parseTarget(target);
  const registered = factories.get(parsed.scheme);
  if (registered !== undefined) return registered(parsed, options);
  switch (parsed.scheme) {
    case 'static':
      return new StaticEndpointSource(parsed.endpoints, parsed.uri);
    case 'file':
      return new FileEndpointSource({ ...(options.file ?? {}), path: parsed.path, clock: options.clock });
    case 'dns':
      return new DnsEndpointSource({
        ...(options.dns ?? {}),
        host: parsed.host,
        port: parsed.port,
        clock: options.clock,
      });
    case 'k8s':
      throw new EvenlbError(
        ErrorCodes.INVALID_TARGET,
        `target ${JSON.stringify(target)}: no endpoint source for k8s:/// is registered; import the Kubernetes ` +
          'discovery module (it registers itself) or pass an EndpointSource',
        { details: { target, scheme: 'k8s' } },
      );
  }
}
