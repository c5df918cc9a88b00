/**
 * kube-proxy's iptables rules for one Service port, rendered as `iptables-restore` input for
 * the nat table, exactly as kube-proxy's iptables mode writes them: `KUBE-SERVICES` matches
 * the ClusterIP and port and jumps to `KUBE-SVC-<hash>`, which picks an endpoint chain with
 * `-m statistic --mode random --probability 1/(N-i)` (endpoints sorted by "ip:port", the last
 * rule unconditional), and each `KUBE-SEP-<hash>` DNATs to its endpoint. Chain names use
 * kube-proxy's hash: base32(sha256(servicePortName + protocol [+ endpoint]))[:16]. The choice
 * is made per *connection* (conntrack pins the rest), which is the whole problem evenlb is
 * about.
 */
import { createHash } from 'node:crypto';

export interface ServiceEndpoint {
  readonly address: string;
  readonly port: number;
}

export interface KubeProxyRulesInput {
  /** kube-proxy's ServicePortName string: `namespace/name:portName`. */
  readonly servicePortName: string;
  /** The Service's ClusterIP (here: a VIP inside 127.0.0.0/8). */
  readonly clusterIp: string;
  readonly port: number;
  readonly endpoints: readonly ServiceEndpoint[];
  /** Endpoint chains written by the previous sync; those not used any more are deleted. */
  readonly previousEndpointChains?: readonly string[];
}

export interface KubeProxyRules {
  /** `iptables-restore --noflush` input. */
  readonly text: string;
  readonly serviceChain: string;
  /** Endpoint chains in rule order (endpoints sorted as kube-proxy sorts them). */
  readonly endpointChains: readonly string[];
  /** The endpoints in rule order. */
  readonly endpoints: readonly ServiceEndpoint[];
}

const PROTOCOL = 'tcp';
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 of the first 10 bytes (16 characters), as kube-proxy's hash prefix. */
function hash16(input: string): string {
  const bytes = createHash('sha256').update(input).digest().subarray(0, 10);
  let bits = 0n;
  for (const b of bytes) bits = (bits << 8n) | BigInt(b);
  let out = '';
  for (let i = 15; i >= 0; i--) out += BASE32[Number((bits >> BigInt(i * 5)) & 31n)];
  return out;
}

/** `KUBE-SVC-…` for a Service port (kube-proxy's `servicePortChainName`). */
export function serviceChainName(servicePortName: string): string {
  return `KUBE-SVC-${hash16(servicePortName + PROTOCOL)}`;
}

/** `KUBE-SEP-…` for one endpoint of a Service port (kube-proxy's `servicePortEndpointChainName`). */
export function endpointChainName(servicePortName: string, endpoint: ServiceEndpoint): string {
  return `KUBE-SEP-${hash16(servicePortName + PROTOCOL + endpointString(endpoint))}`;
}

function endpointString(e: ServiceEndpoint): string {
  return `${e.address}:${e.port}`;
}

/** kube-proxy's probability text for rule `i` of `n`: 1/(n-i) with 10 decimals. */
export function ruleProbability(i: number, n: number): string {
  return (1 / (n - i)).toFixed(10);
}

/**
 * Renders the nat-table rules for one Service port.
 *
 * @example
 * renderKubeProxyRules({ servicePortName: 'default/web:http', clusterIp: '127.100.0.1', port: 80,
 *   endpoints: [{ address: '127.0.1.1', port: 8080 }, { address: '127.0.1.2', port: 8080 }] }).text
 */
export function renderKubeProxyRules(input: KubeProxyRulesInput): KubeProxyRules {
  const name = input.servicePortName;
  const svc = serviceChainName(name);
  // kube-proxy sorts endpoints by their "ip:port" string, then de-duplicates.
  const unique = new Map(input.endpoints.map((e) => [endpointString(e), e] as const));
  const endpoints = [...unique.keys()].sort().map((k) => unique.get(k)!);
  const seps = endpoints.map((e) => endpointChainName(name, e));
  const stale = (input.previousEndpointChains ?? []).filter((c) => !seps.includes(c));

  const lines = ['*nat', ':KUBE-SERVICES - [0:0]', `:${svc} - [0:0]`];
  for (const c of [...seps, ...stale]) lines.push(`:${c} - [0:0]`);
  if (endpoints.length > 0) {
    lines.push(
      `-A KUBE-SERVICES -d ${input.clusterIp}/32 -p tcp -m comment --comment "${name} cluster IP" -m tcp --dport ${input.port} -j ${svc}`,
    );
  }
  const n = endpoints.length;
  endpoints.forEach((e, i) => {
    const comment = `-m comment --comment "${name} -> ${endpointString(e)}"`;
    const statistic = i < n - 1 ? ` -m statistic --mode random --probability ${ruleProbability(i, n)}` : '';
    lines.push(`-A ${svc} ${comment}${statistic} -j ${seps[i]}`);
  });
  endpoints.forEach((e, i) => {
    lines.push(
      `-A ${seps[i]} -p tcp -m comment --comment "${name}" -m tcp -j DNAT --to-destination ${endpointString(e)}`,
    );
  });
  for (const c of stale) lines.push(`-X ${c}`);
  lines.push('COMMIT', '');
  return Object.freeze({ text: lines.join('\n'), serviceChain: svc, endpointChains: Object.freeze(seps), endpoints });
}
