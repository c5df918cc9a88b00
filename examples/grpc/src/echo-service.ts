/**
 * The example's gRPC service, loaded from `echo.proto` with @grpc/proto-loader: the service
 * definition for the server and the client constructor for the client. Shared by both sides.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

export interface SayRequest {
  text: string;
}
export interface SayReply {
  text: string;
  pod: string;
}

export type EchoClient = grpc.Client & {
  Say(
    request: SayRequest,
    options: grpc.CallOptions,
    callback: (err: grpc.ServiceError | null, reply?: SayReply) => void,
  ): grpc.ClientUnaryCall;
};

export type EchoClientConstructor = new (
  target: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ChannelOptions,
) => EchoClient;

const definition = loadSync(join(import.meta.dirname, '..', 'echo.proto'), { keepCase: true, defaults: true });
const pkg = grpc.loadPackageDefinition(definition) as unknown as {
  evenlb: { example: { Echo: EchoClientConstructor & { service: grpc.ServiceDefinition } } };
};

/** The generated client class. */
export const Echo = pkg.evenlb.example.Echo;
/** The service definition, for `server.addService`. */
export const echoServiceDefinition = Echo.service;
