/**
 * `filterEmit`: puts a filter in front of an emitter's `emit`, so a listener-free part (the
 * connection registry) can see an event before every listener and swallow it — a prepended
 * listener can look, but cannot stop the event. The filter sees the event and its first two
 * arguments (all the events filtered need); the wrapper passes `arguments` on as they came, so
 * an event costs no rest array. Undoing restores `emit` unless someone wrapped it again since.
 */

type EmitFn = (event: string | symbol, ...args: unknown[]) => boolean;
/** Anything with an `emit` (servers, HTTP/2 sessions). */
export type Emitter = { emit: EmitFn };
/** Returns false to swallow the event. */
export type EmitFilter = (event: string | symbol, first: unknown, second: unknown) => boolean;

/**
 * Replaces `target.emit` with `filter` in front of it while `active()`; returns the undo.
 *
 * @example
 * const undo = filterEmit(server, () => true, (event, req) => event !== 'request' || allowed(req));
 * undo();
 */
export function filterEmit(target: Emitter, active: () => boolean, filter: EmitFilter): () => void {
  const hadOwn = Object.hasOwn(target, 'emit');
  const original = target.emit;
  const wrapped = function (this: unknown, event: string | symbol, first?: unknown, second?: unknown): boolean {
    if (active() && !filter(event, first, second)) return false;
    // biome-ignore lint/complexity/noArguments: every argument, passed on without copying
    return original.apply(this, arguments as unknown as [string | symbol, ...unknown[]]);
  } as EmitFn;
  target.emit = wrapped;
  return () => {
    if (target.emit !== wrapped) return;
    if (hadOwn) target.emit = original;
    else delete (target as Partial<Emitter>).emit;
  };
}
