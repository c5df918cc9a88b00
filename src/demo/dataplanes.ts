/**
 * How each phase's clients reach the pods. The loopback dataplanes run everything on the host:
 * BalancedAgent in the clients (pinned legacy mode or per request), or `evenlb proxy` as a real
 * child process fed by a watched endpoints file. The netfilter dataplane lives in its own file.
 */
import { rename, writeFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Clock } from '../core/clock.js';
import type { EndpointInput } from '../core/endpoint.js';
import { cliScript } from './child-scripts.js';
import { DemoChild } from './demo-child.js';
import type { PhaseDataplane } from './run-phase.js';

/** Clients with their own BalancedAgent; `roundTrip: false` is the legacy pinned mode. */
export function agentDataplane(roundTrip: boolean, podArgs?: readonly string[]): PhaseDataplane {
  return {
    description: roundTrip
      ? 'BalancedAgent per client, endpoint picked per request'
      : 'BalancedAgent per client with RoundTripLoadBalancing=false (endpoint picked per connection)',
    ...(podArgs === undefined ? {} : { podArgs }),
    loadMode: (endpoints) => ({ kind: 'agent', roundTrip, endpoints }),
    close: async () => {},
  };
}

/** A free TCP port on `host` (bound and released), for children that cannot report theirs. */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port: 0 }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once the exited child's stderr has been read to its end (at most 1 s), so its tail is complete. */
function stderrClosed(child: DemoChild, clock: Clock): Promise<void> {
  const stderr = child.process.stderr;
  if (stderr === null || stderr.closed) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = clock.setTimeout(resolve, 1000);
    stderr.once('close', () => {
      timer.cancel();
      resolve();
    });
  });
}

/**
 * Resolves once `host:port` accepts a TCP connection. Rejects when `child` exits first or after
 * `timeoutMs`, with the child's stderr tail in the message, so a phase whose proxy cannot start
 * fails and says why.
 */
export async function waitForListener(
  host: string,
  port: number,
  clock: Clock,
  timeoutMs: number,
  child?: DemoChild,
): Promise<void> {
  const deadline = clock.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (child?.hasExited) {
      await stderrClosed(child, clock);
      throw new Error(`${child.name} exited before listening:\n${child.stderrTail}`);
    }
    if (clock.now() > deadline) {
      const tail = child === undefined || child.stderrTail === '' ? '' : `; ${child.name} stderr:\n${child.stderrTail}`;
      throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms${tail}`);
    }
    await new Promise<void>((resolve) => clock.setTimeout(resolve, 50));
  }
}

let peersFiles = 0;

/**
 * Writes a `file:///` endpoint list atomically (a temp file renamed over it), so a watcher never
 * reads half a list.
 */
function endpointFileWriter(file: string): (endpoints: EndpointInput[]) => Promise<void> {
  let version = 0;
  return async (endpoints) => {
    const tmp = `${file}.${++version}.tmp`;
    await writeFile(tmp, `${JSON.stringify(endpoints, null, 2)}\n`);
    await rename(tmp, file);
  };
}

/**
 * Gives the pods of `dataplane` a watched `file:///` endpoint list of their own Service (the
 * fair-share recycler's peers), rewritten atomically on every endpoint change before the
 * dataplane's own publishing. `podArgs` come after the peers flag.
 */
export function withPeersFile(dataplane: PhaseDataplane, dir: string, podArgs: readonly string[]): PhaseDataplane {
  const file = join(dir, `peers-${++peersFiles}.json`);
  const write = endpointFileWriter(file);
  return {
    ...dataplane,
    podArgs: [...(dataplane.podArgs ?? []), '--fair-share-peers', pathToFileURL(file).href, ...podArgs],
    async start(endpoints) {
      await write(endpoints);
      await dataplane.start?.(endpoints);
    },
    async publish(endpoints) {
      await write(endpoints);
      await dataplane.publish?.(endpoints);
    },
  };
}

/**
 * The sidecar phase's pods on `dataplane`: each pod is a plain app behind `evenlb proxy
 * --sidecar` (`sidecar-pod`), its port the sidecar's; the clients reach the pods as
 * `dataplane` says (pinned connections, or kube-proxy rules).
 */
export function sidecarPods(dataplane: PhaseDataplane): PhaseDataplane {
  return {
    ...dataplane,
    description: `${dataplane.description} (each pod: evenlb proxy --sidecar → a plain node:http app)`,
    podScript: 'sidecar-pod',
    prestartReplacements: true,
  };
}

const PROXY_HOST = '127.0.2.1';

/**
 * Pinned clients (one connection each) → `evenlb proxy` (a child process running the built CLI)
 * → pods. The proxy's upstream is a `file:///` endpoint list the demo rewrites atomically.
 */
export function proxyDataplane(dir: string, clock: Clock): PhaseDataplane {
  const file = join(dir, 'endpoints.json');
  let proxy: DemoChild | undefined;
  let url = '';
  const write = endpointFileWriter(file);
  return {
    description: 'clients (one connection each) → evenlb proxy (child process, file:/// upstream) → pods',
    async start(endpoints) {
      await write(endpoints);
      const port = await freePort(PROXY_HOST);
      const adminPort = await freePort(PROXY_HOST);
      proxy = new DemoChild('evenlb proxy', process.execPath, [
        cliScript(),
        'proxy',
        '--listen',
        `${PROXY_HOST}:${port}`,
        '--upstream',
        pathToFileURL(file).href,
        '--admin',
        `${PROXY_HOST}:${adminPort}`,
      ]);
      await waitForListener(PROXY_HOST, port, clock, 10_000, proxy);
      url = `http://${PROXY_HOST}:${port}/`;
    },
    publish: write,
    loadMode: () => ({ kind: 'direct', url }),
    async close() {
      if (proxy === undefined) return;
      proxy.kill('SIGTERM');
      await proxy.waitExit(3000);
    },
  };
}
