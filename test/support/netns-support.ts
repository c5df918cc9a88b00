/**
 * Whether tests that build kube-proxy iptables rules in a network namespace can run here (Linux,
 * root or CAP_SYS_ADMIN + CAP_NET_ADMIN, `ip` and `iptables` installed). Where they cannot, those
 * tests skip and name the reason in their title or skip note — unless `EVENLB_REQUIRE_NETNS=1`
 * (set by `.ci/run`), which turns the missing support into a failure so CI never skips them.
 */
import { type NetfilterSupport, netfilterSupport } from '../../src/netfilter/index.js';

/** The machine's support, checked once; throws when it is missing and required. */
export function netnsSupport(): NetfilterSupport {
  const support = netfilterSupport();
  if (!support.ok && process.env.EVENLB_REQUIRE_NETNS === '1') {
    throw new Error(`network-namespace tests cannot run: ${support.reason}; EVENLB_REQUIRE_NETNS=1 requires them`);
  }
  return support;
}
