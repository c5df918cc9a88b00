/**
 * Can this process run kube-proxy-style iptables rules in a network namespace? It needs Linux,
 * the CAP_SYS_ADMIN and CAP_NET_ADMIN capabilities (root, in practice) and the `ip` (iproute2)
 * and `iptables` tools. The check is synchronous and side-effect free, so tests can decide
 * `it.skipIf(!support.ok)` at collection time and say why.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type NetfilterSupport = { readonly ok: true } | { readonly ok: false; readonly reason: string };

const TOOLS = ['ip', 'iptables', 'iptables-restore', 'iptables-save'] as const;
export type NetfilterTool = (typeof TOOLS)[number];

/** sbin directories are searched too: they are often missing from PATH outside login shells. */
const EXTRA_DIRS = ['/usr/local/sbin', '/usr/sbin', '/sbin', '/usr/bin', '/bin'];

const CAP_NET_ADMIN = 12n;
const CAP_SYS_ADMIN = 21n;

/** Absolute path of `tool`, or undefined when it is not installed. */
export function resolveTool(tool: NetfilterTool): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter((d) => d !== ''), ...EXTRA_DIRS];
  for (const dir of dirs) {
    const candidate = join(dir, tool);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The effective capability set of this process, from /proc/self/status. */
function effectiveCapabilities(): bigint | undefined {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
    return hex === undefined ? undefined : BigInt(`0x${hex}`);
  } catch {
    return undefined;
  }
}

/**
 * Whether `KubeProxyNamespace` can work here, and if not, why.
 *
 * @example
 * const support = netfilterSupport();
 * it.skipIf(!support.ok)(`kube-proxy hop${support.ok ? '' : ` (skipped: ${support.reason})`}`, ...);
 */
export function netfilterSupport(): NetfilterSupport {
  if (process.platform !== 'linux') {
    return { ok: false, reason: `network namespaces need Linux; this is ${process.platform}` };
  }
  const caps = effectiveCapabilities();
  const uid = process.getuid?.();
  if (caps !== undefined) {
    const missing = [
      ...((caps >> CAP_SYS_ADMIN) & 1n ? [] : ['CAP_SYS_ADMIN']),
      ...((caps >> CAP_NET_ADMIN) & 1n ? [] : ['CAP_NET_ADMIN']),
    ];
    if (missing.length > 0) {
      return { ok: false, reason: `needs root (${missing.join(' and ')} missing; uid ${uid ?? 'unknown'})` };
    }
  } else if (uid !== 0) {
    return { ok: false, reason: `needs root (uid ${uid ?? 'unknown'})` };
  }
  for (const tool of TOOLS) {
    if (resolveTool(tool) === undefined) {
      const pkg = tool === 'ip' ? 'iproute2' : 'iptables';
      return { ok: false, reason: `"${tool}" not found (install the ${pkg} package)` };
    }
  }
  return { ok: true };
}
