/**
 * What a component leaves running: sockets, servers, HTTP/2 sessions and timers created while a
 * `LiveResources` tracker was on and not yet gone. `process.getActiveResourcesInfo()` cannot
 * answer this — it skips `unref()`ed handles and timers, which a leaking component would still
 * hold — so the tracker listens to `async_hooks` init/destroy. Timers count only when code under
 * `src/` called `setTimeout` itself (the test's, the runner's and Node's own timers — e.g. the
 * idle timer node:http2 keeps on a closed session until it fires — are not the component's).
 *
 * @example
 * const live = LiveResources.start();
 * await proxy.close();
 * await waitFor(() => live.remaining().length === 0, 2000, 'nothing left running');
 * live.stop();
 */
import { createHook } from 'node:async_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
/** Node emits the destroy of a TLS socket that failed its handshake only when it is collected. */
const collectGarbage = runInNewContext('gc') as () => void;

/** Handle types that mean "something is still open". */
const HANDLES = new Set(['TCPWRAP', 'TCPSERVERWRAP', 'TLSWRAP', 'HTTP2SESSION', 'PIPEWRAP', 'UDPWRAP']);
const TIMER = 'Timeout';

export interface LiveResource {
  readonly type: string;
  /** Where it was created (first `src/` frame); '' when not from `src/` (accepted sockets). */
  readonly where: string;
}

export class LiveResources {
  readonly #live = new Map<number, LiveResource>();
  readonly #hook;

  private constructor() {
    this.#hook = createHook({
      init: (id, type) => {
        if (!HANDLES.has(type) && type !== TIMER) return;
        const frames = (new Error().stack ?? '').split('\n').slice(1);
        const own = (l: string): boolean => l.includes('/src/') && !l.includes('node_modules');
        if (type === TIMER) {
          // The caller of setTimeout: a timer Node sets for itself (http2's idle timer per
          // session, the Date header cache) is Node's, even when our code led to it.
          const caller = frames.find(
            (l) =>
              !/\(node:(internal\/async_hooks|internal\/timers|timers)[:)]/.test(l) && !l.includes('live-resources'),
          );
          if (caller === undefined || !own(caller)) return;
          this.#live.set(id, { type, where: caller.trim() });
          return;
        }
        this.#live.set(id, { type, where: frames.find(own)?.trim() ?? '' });
      },
      destroy: (id) => {
        this.#live.delete(id);
      },
    });
    this.#hook.enable();
  }

  /** Starts tracking resources created from now on. */
  static start(): LiveResources {
    return new LiveResources();
  }

  /**
   * Resources created since `start()` and still alive, after a garbage collection (a TLS socket
   * whose handshake failed reports its end only when collected).
   */
  remaining(): LiveResource[] {
    collectGarbage();
    return [...this.#live.values()];
  }

  stop(): void {
    this.#hook.disable();
  }
}
