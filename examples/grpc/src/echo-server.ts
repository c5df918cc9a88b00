/**
 * The example's gRPC server. Two things make it balance well when clients cannot be changed:
 * `grpc.max_connection_age_ms` (grpc-js sends GOAWAY when a connection reaches that age, ±10%
 * jitter, and lets its calls finish for `grpc.max_connection_age_grace_ms`), so long-lived
 * client channels reconnect — through kube-proxy, a fresh per-connection pick — and a pod added
 * by a scale-out starts getting connections; and a graceful shutdown on SIGTERM (see
 * `server-main.ts`). Clients that use `evenlb/grpc` balance per call and need neither.
 */
import * as grpc from '@grpc/grpc-js';
import { echoServiceDefinition, type SayReply, type SayRequest } from './echo-service.js';

export interface EchoServerOptions {
  /** Reported in every reply; in Kubernetes the pod name (`HOSTNAME`). */
  pod: string;
  /** Close connections after this age (ms); default 5 minutes. 0 turns it off. */
  maxConnectionAgeMs?: number;
  /** Calls on an aged connection get this long to finish (ms); default 30 s. */
  maxConnectionAgeGraceMs?: number;
}

/** A grpc-js server with the Echo service; bind it with `bindAsync`. */
export function createEchoServer(options: EchoServerOptions): grpc.Server {
  const age = options.maxConnectionAgeMs ?? 300_000;
  const server = new grpc.Server({
    ...(age > 0 ? { 'grpc.max_connection_age_ms': age } : {}),
    'grpc.max_connection_age_grace_ms': options.maxConnectionAgeGraceMs ?? 30_000,
  });
  let served = 0;
  server.addService(echoServiceDefinition, {
    Say(call: grpc.ServerUnaryCall<SayRequest, SayReply>, callback: grpc.sendUnaryData<SayReply>) {
      served++;
      callback(null, { text: call.request.text, pod: options.pod });
    },
  });
  Object.defineProperty(server, 'served', { get: () => served });
  return server;
}

/** Calls the server has answered (for the example's tests). */
export function servedBy(server: grpc.Server): number {
  return (server as grpc.Server & { served?: number }).served ?? 0;
}
