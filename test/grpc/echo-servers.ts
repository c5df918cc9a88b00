/**
 * Real grpc-js servers for the `evenlb/grpc` tests: an `Echo` service with one unary method whose
 * messages are raw bytes (no .proto needed). Each server answers with its own name and counts the
 * calls it served and those in progress; a request `delay:<ms>` answers after that long (plus the
 * server's own `delayMs`). Servers
 * listen on loopback with an ephemeral port (several may share one port on distinct 127.0.x.y
 * addresses, as a Service's pods share a port).
 */
import * as grpc from '@grpc/grpc-js';

const identity = (b: Buffer): Buffer => b;

/** The service definition, shared by servers and clients. */
export const echoService = {
  Unary: {
    path: '/evenlb.test.Echo/Unary',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
    originalName: 'unary',
  },
} satisfies grpc.ServiceDefinition;

export type EchoClient = grpc.Client & {
  Unary(
    request: Buffer,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (err: grpc.ServiceError | null, reply?: Buffer) => void,
  ): grpc.ClientUnaryCall;
};

export const EchoClient = grpc.makeGenericClientConstructor(echoService, 'Echo') as unknown as new (
  target: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ChannelOptions,
) => EchoClient;

export interface EchoServer {
  readonly name: string;
  readonly address: string;
  readonly port: number;
  /** `address:port`, the endpoint key. */
  readonly key: string;
  /** Calls answered since the last reset. */
  served: number;
  /** Calls being handled now. */
  inProgress: number;
  /** When set, every call fails with this gRPC status code. */
  failWith: number | undefined;
  /** Extra delay before every answer (ms). */
  delayMs: number;
  kill(): void;
  close(): Promise<void>;
}

/** Starts a server on `address:port` (port 0: ephemeral), with grpc-js `options` (interceptors). */
export async function startEchoServer(
  name: string,
  address = '127.0.0.1',
  port = 0,
  options: grpc.ServerOptions = {},
): Promise<EchoServer> {
  const server = new grpc.Server(options);
  const handle: EchoServer = {
    name,
    address,
    port: 0,
    key: '',
    served: 0,
    inProgress: 0,
    failWith: undefined,
    delayMs: 0,
    kill: () => server.forceShutdown(),
    close: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
  server.addService(echoService, {
    Unary(call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) {
      handle.inProgress++;
      const text = call.request.toString();
      const delayMs = (text.startsWith('delay:') ? Number(text.slice(6)) : 0) + handle.delayMs;
      const answer = () => {
        handle.inProgress--;
        handle.served++;
        if (handle.failWith === undefined) callback(null, Buffer.from(name));
        else callback({ code: handle.failWith, details: `${name} fails` });
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    },
  });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${address}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  Object.assign(handle, { port: bound, key: `${address}:${bound}` });
  return handle;
}

/** Starts `count` servers on 127.0.0.1, each on its own ephemeral port. */
export async function startEchoServers(count: number): Promise<EchoServer[]> {
  const out: EchoServer[] = [];
  for (let i = 0; i < count; i++) out.push(await startEchoServer(`s${i + 1}`));
  return out;
}

/** One unary call; resolves with the answering server's name or the gRPC error. */
export function call(
  client: EchoClient,
  text = 'hi',
  metadata = new grpc.Metadata(),
  deadlineMs = 5000,
): Promise<{ ok: true; server: string } | { ok: false; error: grpc.ServiceError }> {
  return new Promise((resolve) => {
    client.Unary(Buffer.from(text), metadata, { deadline: Date.now() + deadlineMs }, (err, reply) => {
      if (err) resolve({ ok: false, error: err });
      else resolve({ ok: true, server: String(reply) });
    });
  });
}

/** Waits (bounded) until `check()` is true, polling on timers. */
export async function waitUntil(check: () => boolean, timeoutMs = 5000, what = 'a condition'): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now() - start;
}

/** max/mean of the values. */
export function maxOverMean(values: readonly number[]): number {
  const total = values.reduce((a, b) => a + b, 0);
  return total === 0 ? 1 : Math.max(...values) / (total / values.length);
}
