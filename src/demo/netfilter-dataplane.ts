/**
 * `--dataplane netfilter`: the pinned phase through real kube-proxy-style rules. The demo creates
 * a network namespace with a Service VIP in 127.0.0.0/8 and iptables `statistic random` DNAT
 * rules (evenlb's `KubeProxyNamespace`), runs the pods and the clients inside it, and syncs the
 * rules with the ready endpoints on every change, as kube-proxy does. Clients open one
 * connection each to the VIP; conntrack pins it to the pod its first packet was sent to.
 */
import { KubeProxyNamespace, netfilterSupport } from '../netfilter/index.js';
import type { Spawner } from './demo-child.js';
import type { PhaseDataplane } from './run-phase.js';

/** Where the namespace comes from (injectable for tests of the harness). */
export interface NetfilterApi {
  /** undefined when supported; otherwise what is missing, in words. */
  support(): string | undefined;
  create(options: { vip: string; port: number }): Promise<KubeProxyNamespace>;
}

/** evenlb's own `KubeProxyNamespace`. */
export const netfilterApi: NetfilterApi = {
  support() {
    const s = netfilterSupport();
    return s.ok ? undefined : s.reason;
  },
  create: (options) => KubeProxyNamespace.create(options),
};

export const SERVICE_VIP = '127.100.0.1';
export const SERVICE_PORT = 80;

/** The netfilter dataplane over an already created namespace. */
export function netfilterDataplane(ns: KubeProxyNamespace, podArgs?: readonly string[]): PhaseDataplane {
  // `ip netns exec` execs the command: the pipes and the process group carry over to node.
  const spawner: Spawner = (command, args) =>
    ns.spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  return {
    description: `clients (one connection each) → Service VIP ${SERVICE_VIP}:${SERVICE_PORT} → iptables statistic-random DNAT (kube-proxy rules in a network namespace) → pods`,
    spawner,
    ...(podArgs === undefined ? {} : { podArgs }),
    loadMode: () => ({ kind: 'direct', url: `http://${SERVICE_VIP}:${SERVICE_PORT}/` }),
    // kube-proxy programs ready endpoints only (terminating ones only as a last resort).
    publish: (endpoints) =>
      ns.syncEndpoints(
        endpoints.filter((e) => e.conditions?.ready !== false).map((e) => ({ address: e.address, port: e.port })),
      ),
    close: () => ns.close(),
  };
}
