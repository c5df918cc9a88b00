/**
 * A pick for a transport that can use only some of the eligible endpoints right now: a gRPC
 * channel sends a call only on a connected subchannel, and a subchannel's connectivity is not
 * the endpoint's readiness (a first connect must not read as a pod joining — slow start, the
 * herding guard — as a change of the balancer's endpoints would). The balancer's picker
 * decides: its pick when usable; else it is asked again without that endpoint
 * (`PickContext.exclude`: the policy again, then another of its endpoints); at last the first
 * usable endpoint of the picker's own list, from a position that moves on after each such
 * pick so these fallbacks spread. The picker never lists an ejected or not-ready endpoint, so
 * no step goes around outlier detection or discovery.
 */
import type { NonePicked, PickContext, Picker } from '../balancing/picker.js';
import type { Endpoint } from '../core/endpoint.js';

/** Picks with the endpoint to avoid, after the first one was not usable. */
const REPICKS = 2;

/**
 * The endpoint to send to, the picker's `none` when it offers nothing, or `undefined` when it
 * offers endpoints but none is usable now. `rotation.next` is where the list search starts;
 * it moves past an endpoint found there.
 *
 * @example
 * const picked = pickUsable(balancer.picker, {}, (key) => connected.has(key), { next: 0 });
 */
export function pickUsable(
  picker: Picker,
  ctx: PickContext,
  usable: (endpointKey: string) => boolean,
  rotation: { next: number },
): Endpoint | NonePicked | undefined {
  ctx.exclude = undefined;
  let picked = picker.pick(ctx);
  for (let i = 0; i < REPICKS && picked.type === 'picked' && !usable(picked.endpoint.key); i++) {
    ctx.exclude = picked.endpoint.key;
    picked = picker.pick(ctx);
  }
  ctx.exclude = undefined;
  if (picked.type === 'none') return picked;
  if (usable(picked.endpoint.key)) return picked.endpoint;
  const list = picker.endpoints;
  for (let i = 0; i < list.length; i++) {
    const at = (rotation.next + i) % list.length;
    const tracked = list[at];
    if (tracked === undefined || tracked.weight <= 0 || !usable(tracked.endpoint.key)) continue;
    rotation.next = at + 1;
    return tracked.endpoint;
  }
  return undefined;
}
