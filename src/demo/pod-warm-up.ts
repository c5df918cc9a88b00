/**
 * A demo pod warms up before it is listed: requests over a few keep-alive connections (so the
 * accept path, the parser and concurrent requests are compiled) and questions to its own load
 * document (so both ends of the fair-share exchange are). Without it the first seconds of a new
 * pod measure V8's compiler, not the balancing. Warm-up requests carry `WARM_UP_HEADER`, which
 * the pods do not count. Shared by the evenlb pods (`pod-main`) and the sidecar pods
 * (`sidecar-pod-main`), which warm up through their sidecar.
 */
import { Agent, request } from 'node:http';
import type { FairShareLoadMetric } from '../balancing/fair-share/fair-share-options.js';
import { systemClock } from '../core/clock.js';
import { DEFAULT_LOAD_PATH } from '../server/fair-share/fair-share-options.js';
import { LoadExchangeClient } from '../server/fair-share/load-exchange.js';

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

/**
 * Asks a pod's own load document at `address:port` `count` times (4 at a time) through the load
 * exchange's own client — undici's HTTP/1.1 client and its llhttp parser, which the exchange
 * uses and nothing else in a pod does — so both ends of the exchange are compiled before the
 * pod is listed. Once listed, a pod asks every peer and is asked by every peer ten times a
 * second: a cold client compiles llhttp's WebAssembly and loads undici's parser modules at its
 * first question, and on a saturated machine that stalled the new pod's event loop (and its
 * clients, who send one request at a time) for seconds. Fifty questions are enough: the first
 * few compile the code, the rest let it be optimised.
 *
 * @example
 * await warmUpLoadExchange('127.0.1.1', 9901, 50, 'connections');
 */
export async function warmUpLoadExchange(
  address: string,
  port: number,
  count: number,
  metric: FairShareLoadMetric | undefined,
): Promise<void> {
  if (!(count > 0)) return;
  const client = new LoadExchangeClient({
    clock: systemClock,
    timeoutMs: 5000,
    metric: metric ?? 'requests-per-second',
    path: DEFAULT_LOAD_PATH,
    tls: false,
  });
  const askOnce = async (): Promise<void> => {
    const answer = await client.ask(address, port);
    if (!answer.ok) throw new Error(`load exchange warm-up: ${answer.error}`);
  };
  try {
    // As many questions at once as a listed pod asks per period (its peers), in less time.
    await inParallelLoops(count, askOnce);
  } finally {
    await client.close();
  }
}
