/**
 * kube-proxy (iptables mode) in a network namespace: real per-connection random DNAT to
 * loopback "pods", for tests and `evenlb demo --dataplane netfilter`. Needs root and the
 * `ip` and `iptables` tools; `netfilterSupport()` says whether they are there.
 */
export { KubeProxyNamespace, type KubeProxyNamespaceOptions } from './kube-proxy-namespace.js';
export {
  endpointChainName,
  type KubeProxyRules,
  type KubeProxyRulesInput,
  renderKubeProxyRules,
  ruleProbability,
  type ServiceEndpoint,
  serviceChainName,
} from './kube-proxy-rules.js';
export { type NetfilterSupport, netfilterSupport, resolveTool } from './netfilter-support.js';
