/**
 * The `examples/grpc` client and server work as the README says: three example servers (real
 * grpc-js, echo.proto via proto-loader) and the example client with a `static:///` target after
 * `registerGrpc(grpc)`; every server takes its share of the calls over the client's one channel.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createEchoClient, say } from '../../examples/grpc/src/echo-client.js';
import { createEchoServer, servedBy } from '../../examples/grpc/src/echo-server.js';
import { SeededRandom } from '../../src/core/random.js';
import { type GrpcRegistration, registerGrpc } from '../../src/grpc/index.js';

const servers: { server: grpc.Server; port: number }[] = [];
let evenlb: GrpcRegistration;

beforeAll(async () => {
  for (let i = 1; i <= 3; i++) {
    const server = createEchoServer({ pod: `echo-${i}`, maxConnectionAgeMs: 60_000 });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    servers.push({ server, port });
  }
  evenlb = registerGrpc(grpc, { random: new SeededRandom(11) });
});
afterAll(async () => {
  await evenlb.close();
  for (const { server } of servers) server.forceShutdown();
});

it('the example client spreads its calls over every example server', async () => {
  const client = createEchoClient(`static:///${servers.map((s) => `127.0.0.1:${s.port}`).join(',')}`);
  try {
    const pods = new Map<string, number>();
    for (let i = 0; i < 150; i++) {
      const reply = await say(client, `hello ${i}`);
      expect(reply.text).toBe(`hello ${i}`);
      pods.set(reply.pod, (pods.get(reply.pod) ?? 0) + 1);
    }
    expect([...pods.keys()].sort()).toEqual(['echo-1', 'echo-2', 'echo-3']);
    for (const { server } of servers) expect(servedBy(server)).toBeGreaterThanOrEqual(25);
    expect(evenlb.stats().routes[0]?.policy).toBe('least-request');
  } finally {
    client.close();
  }
});
