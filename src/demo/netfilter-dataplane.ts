/**
 * `--dataplane netfilter`: the pinned phase through real kube-proxy-style rules. The demo creates
 * a network namespace with a Service VIP in 127.0.0.0/8 and iptables `statistic random` DNAT
 * rules (evenlb's `KubeProxyNamespace`), runs the pods and the clients inside it, and syncs the
 * rules with the ready endpoints on every change, as kube-proxy does. Clients open one
 * connection each to the VIP; conntrack pins it to the pod its first packet was sent to.
 */
import type { ChildProcess } from 'node:child_process';
import type { EndpointInput } from '../core/endpoint.js';
import type { Spawner } from './demo-child.js';
import type { PhaseDataplane } from './run-phase.js';

/** What the demo needs of evenlb's `KubeProxyNamespace`. */
export interface KubeProxyNamespaceLike {
  spawn(command: string, args: readonly string[]): ChildProcess;
  syncEndpoints(endpoints: readonly EndpointInput[]): Promise<void> | void;
  close(): Promise<void>;
}

export interface NetfilterApi {
  /** undefined when supported; otherwise what is missing, in words. */
  support(): Promise<string | undefined> | string | undefined;
  create(options: { vip: string; port: number }): Promise<KubeProxyNamespaceLike>;
}

export const SERVICE_VIP = '127.100.0.1';
export const SERVICE_PORT = 80;

/** The netfilter dataplane over an already created namespace. */
export function netfilterDataplane(ns: KubeProxyNamespaceLike): PhaseDataplane {
  const spawner: Spawner = (command, args) => ns.spawn(command, args);
  return {
    description: `clients (one connection each) → Service VIP ${SERVICE_VIP}:${SERVICE_PORT} → iptables statistic-random DNAT (kube-proxy rules in a network namespace) → pods`,
    spawner,
    loadMode: () => ({ kind: 'direct', url: `http://${SERVICE_VIP}:${SERVICE_PORT}/` }),
    // kube-proxy programs ready endpoints only (terminating ones only as a last resort).
    publish: (endpoints) => ns.syncEndpoints(endpoints.filter((e) => e.conditions?.ready !== false)),
    close: () => ns.close(),
  };
}
