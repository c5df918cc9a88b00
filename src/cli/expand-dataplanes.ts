/**
 * The dataplane names `evenlb sim --dataplanes` accepts beyond the registry's own: `prefix*`
 * patterns (`evenlb:*`, `ipvs-*`) and `kube-proxy:<mode>` for kube-proxy's modes, the
 * per-connection dataplanes (`kube-proxy:iptables` is `iptables`, `kube-proxy:*` all of them).
 * A pattern that matches nothing is an error listing what it could have matched.
 */
import { listDataplanes } from '../sim/index.js';

/** `kube-proxy:<mode>` names a kube-proxy dataplane (`kube-proxy:iptables` is `iptables`). */
const KUBE_PROXY = 'kube-proxy:';

/**
 * Expands `evenlb:*`-style patterns against the known dataplane names, and reads
 * `kube-proxy:<mode>` (or `kube-proxy:*`) as kube-proxy's modes (the per-connection dataplanes).
 * Names that are neither are passed on as given (`resolveDataplanes` rejects unknown ones).
 *
 * @example
 * expandDataplanes(['kube-proxy:iptables', 'evenlb:*']) // ['iptables', 'evenlb:round-robin', …]
 */
export function expandDataplanes(names: readonly string[]): string[] {
  const all = listDataplanes();
  const kubeProxy = new Set(all.filter((d) => d.granularity === 'connection').map((d) => d.name));
  const out: string[] = [];
  for (const given of names) {
    const aliased = given.startsWith(KUBE_PROXY) && kubeProxy.has(given.slice(KUBE_PROXY.length));
    const name = aliased ? given.slice(KUBE_PROXY.length) : given;
    if (!name.endsWith('*')) {
      out.push(name);
      continue;
    }
    const kubeProxyPattern = name.startsWith(KUBE_PROXY);
    const known = kubeProxyPattern ? [...kubeProxy] : all.map((d) => d.name);
    const prefix = kubeProxyPattern ? name.slice(KUBE_PROXY.length, -1) : name.slice(0, -1);
    const matches = known.filter((k) => k.startsWith(prefix));
    if (matches.length === 0)
      throw new Error(`dataplane pattern ${JSON.stringify(name)} matches nothing; known: ${known.join(', ')}`);
    out.push(...matches);
  }
  return [...new Set(out)];
}
