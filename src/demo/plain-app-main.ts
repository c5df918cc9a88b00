/**
 * The demo's plain app: an HTTP/1.1 server written with Node's core `http` module and nothing
 * else — no evenlb import, no recycler, no load exchange — standing in for a server in any
 * language (a Go webhook, a Java service) behind the fair-share sidecar. It answers every
 * request with its pod's name, counts the requests it serves (the demo's own warm-up requests,
 * marked with a header, are answered and not counted), and prints
 * `{"type":"stats","requests":N}` on stdout for the pod that started it whenever a line arrives
 * on its stdin and when it stops — never on a timer: an app with no request to serve wakes
 * nobody (the demo's pods learn their counts from their sidecar). It exits when its stdin ends
 * (the pod is gone) or on SIGTERM, after closing its server.
 *
 * Usage (spawned by the demo's sidecar pod): `node plain-app.js --name pod-1 --address 127.0.1.1 --port 0`
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { WARM_UP_HEADER } from './pod-warm-up.js';

const { values } = parseArgs({
  options: {
    name: { type: 'string', default: 'app' },
    address: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '0' },
    'evenlb-demo': { type: 'string' },
  },
});

let requests = 0;
const say = (message: object): void => {
  process.stdout.write(`${JSON.stringify(message)}\n`);
};

const server = createServer((req, res) => {
  if (req.headers[WARM_UP_HEADER] === undefined) requests++;
  req.resume();
  const body = `${values.name}\n`;
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
// Its only client is the sidecar's keep-alive pool in the same pod.
server.keepAliveTimeout = 120_000;
server.headersTimeout = 130_000;

const stop = (): void => {
  say({ type: 'stats', requests });
  server.close();
  server.closeAllConnections();
  setImmediate(() => process.exit(0));
};
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  for (let i = chunk.indexOf('\n'); i >= 0; i = chunk.indexOf('\n', i + 1)) say({ type: 'stats', requests });
});
process.stdin.on('end', stop);
process.once('SIGTERM', stop);

server.on('error', (err) => {
  say({ type: 'error', message: err.message });
  process.exit(1);
});
server.listen({ host: values.address, port: Number(values.port) }, () => {
  say({ type: 'listening', port: (server.address() as AddressInfo).port, pid: process.pid });
});
