/**
 * Entry point of the example client: registers evenlb with grpc-js once, then sends `CALLS`
 * unary calls (default 1000) to `TARGET` (default `k8s:///echo.default:grpc`) and prints how
 * they spread over the pods, with the channel's stats. In a pod its ServiceAccount needs
 * `list` and `watch` on endpointslices and services (`deploy/rbac/` in this repository).
 */
import * as grpc from '@grpc/grpc-js';
import { registerGrpc } from '../../../src/grpc/index.js';
import { createEchoClient, say } from './echo-client.js';

const evenlb = registerGrpc(grpc); // once per process, before creating channels
const target = process.env.TARGET ?? 'k8s:///echo.default:grpc';
const calls = Number(process.env.CALLS ?? 1000);
const client = createEchoClient(target);

const byPod = new Map<string, number>();
for (let i = 0; i < calls; i++) {
  const reply = await say(client, `hello ${i}`);
  byPod.set(reply.pod, (byPod.get(reply.pod) ?? 0) + 1);
}
for (const [pod, n] of [...byPod].sort()) process.stdout.write(`${pod}\t${n}\n`);
const route = evenlb.stats().routes[0];
process.stdout.write(
  `max/mean ${route?.window.imbalance.maxOverMean.toFixed(2)} over ${route?.endpoints.length} endpoints\n`,
);
client.close();
await evenlb.close();
