/**
 * The example's client channel. The one line that changes from a plain grpc-js client is the
 * target: `k8s:///echo.default:grpc` (the Service's EndpointSlices) instead of
 * `echo.default.svc.cluster.local:50051` (one connection, pinned by kube-proxy to one pod).
 * `registerGrpc(grpc)` must have run once in the process (see `client-main.ts`).
 */
import * as grpc from '@grpc/grpc-js';
import { Echo, type EchoClient, type SayReply } from './echo-service.js';

/**
 * A client for `target`; with an evenlb target every call is balanced by the `evenlb` policy
 * (least-request unless `grpc.service_config` chooses otherwise).
 *
 * @example
 * // before: new Echo('echo.default.svc.cluster.local:50051', grpc.credentials.createInsecure())
 * const client = createEchoClient('k8s:///echo.default:grpc');
 */
export function createEchoClient(target: string, options: grpc.ChannelOptions = {}): EchoClient {
  return new Echo(target, grpc.credentials.createInsecure(), options);
}

/** One call; resolves with the reply. */
export function say(client: EchoClient, text: string, deadlineMs = 5000): Promise<SayReply> {
  return new Promise((resolve, reject) => {
    client.Say({ text }, { deadline: Date.now() + deadlineMs }, (err, reply) =>
      err || reply === undefined ? reject(err ?? new Error('empty reply')) : resolve(reply),
    );
  });
}
