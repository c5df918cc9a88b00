/**
 * The load prober a cluster runs: an `HttpLoadProber` when its policy reads probe answers
 * (`BalancingPolicy.loadSignals` lists `probes`, as `prequal` does) and `loadProbes` is not
 * `false`; none otherwise, so a cluster whose policy does not probe opens no probe socket. TLS
 * probes verify against the Service's host name unless `tls.servername` says otherwise.
 */
import { isIP } from 'node:net';
import { ensureBuiltinPolicies } from '../balancing/policies/index.js';
import { getPolicy } from '../balancing/policy.js';
import type { Clock } from '../core/clock.js';
import { normalizeHost } from '../core/host.js';
import { parseOptions } from '../core/options.js';
import { loadProbesSpec, type ParsedClusterOptions } from './cluster-options.js';
import { HttpLoadProber } from './http-load-prober.js';

/**
 * The prober for the cluster of options `o`, or undefined when it does not probe.
 * `probeable(key)` is true while the endpoint may be asked (eligible, cluster open).
 *
 * @example
 * const prober = clusterProber(options, clock, (key) => eligible.has(key));
 */
export function clusterProber(
  o: ParsedClusterOptions,
  clock: Clock,
  probeable: (endpointKey: string) => boolean,
): HttpLoadProber | undefined {
  ensureBuiltinPolicies();
  if (o.loadProbes === false || getPolicy(o.policy).loadSignals?.includes('probes') !== true) return undefined;
  const observer = o.observer;
  return new HttpLoadProber({
    options: o.loadProbes ?? parseOptions(`cluster ${o.name} loadProbes`, {}, loadProbesSpec),
    clock,
    probeable,
    tls: o.tls,
    servername: serviceHostName(o.authority ?? o.name),
    ...(observer?.loadProbe === undefined
      ? {}
      : { onResult: (key, result) => observer.loadProbe?.(o.name, key, result) }),
  });
}

/** The host name of a `host[:port]` authority, for a TLS server name; undefined for an IP address. */
function serviceHostName(authority: string): string | undefined {
  const host = normalizeHost(authority);
  return host === '' || isIP(host.charCodeAt(0) === 91 /* [ */ ? host.slice(1, -1) : host) !== 0 ? undefined : host;
}
