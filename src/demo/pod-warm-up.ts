/**
 * A demo pod warms up before it is listed: requests over a few keep-alive connections (so the
 * accept path, the parser and concurrent requests are compiled) and questions to its own load
 * document (so both ends of the fair-share exchange are). Without it the first seconds of a new
 * pod measure V8's compiler, not the balancing. Warm-up requests carry `WARM_UP_HEADER`, which
 * the pods do not count. Shared by the evenlb pods (`pod-main`) and the sidecar pods
 * (`sidecar-pod-main`), which warm up through their sidecar.
 */
import { Agent, request } from 'node:http';

/** The header that marks a warm-up request: pods answer it and leave it out of their counts. */
export const WARM_UP_HEADER = 'x-evenlb-demo-warm-up';
/** Connections (and questions at once) a warm-up uses — as many as a listed pod's peers ask. */
export const WARM_UP_CONNECTIONS = 4;

/**
 * Runs `count` calls of `once`, `WARM_UP_CONNECTIONS` loops at once, each one call after another.
 *
 * @example
 * await inParallelLoops(50, () => askOnce());
 */
export async function inParallelLoops(count: number, once: () => Promise<void>): Promise<void> {
  if (!(count > 0)) return;
  const perLoop = Math.ceil(count / WARM_UP_CONNECTIONS);
  const loop = async (): Promise<void> => {
    for (let i = 0; i < perLoop; i++) await once();
  };
  await Promise.all(Array.from({ length: WARM_UP_CONNECTIONS }, loop));
}

/**
 * Sends `count` warm-up requests to `address:port` over `WARM_UP_CONNECTIONS` keep-alive
 * connections, one after another on each, so the accept path and concurrent requests are warm.
 *
 * @example
 * await warmUp('127.0.1.1', 8080, 400);
 */
export async function warmUp(address: string, port: number, count: number): Promise<void> {
  if (!(count > 0)) return;
  const agent = new Agent({ keepAlive: true, maxSockets: WARM_UP_CONNECTIONS });
  const once = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const req = request({ host: address, port, path: '/', agent, headers: { [WARM_UP_HEADER]: '1' } }, (res) => {
        res.resume();
        res.on('end', resolve);
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  try {
    await inParallelLoops(count, once);
  } finally {
    agent.destroy();
  }
}
