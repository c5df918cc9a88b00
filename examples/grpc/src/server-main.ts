/**
 * Entry point of the example server (the container's command): listens on `PORT` (default 50051)
 * with connections aged out after `MAX_CONNECTION_AGE_MS`; on SIGTERM it stops accepting, lets
 * in-flight calls finish for up to `GRACE_MS` (default 20 s), then exits.
 */
import * as grpc from '@grpc/grpc-js';
import { createEchoServer } from './echo-server.js';

const port = Number(process.env.PORT ?? 50051);
const server = createEchoServer({
  pod: process.env.HOSTNAME ?? 'echo',
  maxConnectionAgeMs: Number(process.env.MAX_CONNECTION_AGE_MS ?? 300_000),
});
server.bindAsync(`0.0.0.0:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
  if (err) {
    process.stderr.write(`cannot listen on ${port}: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`echo server listening on ${bound}\n`);
});

process.once('SIGTERM', () => {
  const graceMs = Number(process.env.GRACE_MS ?? 20_000);
  const timer = setTimeout(() => {
    server.forceShutdown();
    process.exit(0);
  }, graceMs);
  server.tryShutdown(() => {
    clearTimeout(timer);
    process.exit(0);
  });
});
