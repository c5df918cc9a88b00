/**
 * gRPC end to end through the proxy (h2c downstream, `h2` cluster upstream) with real
 * @grpc/grpc-js clients and servers: unary calls spread evenly over 3 servers although the
 * client holds one HTTP/2 connection; a bidirectional stream keeps working; a client cancel
 * reaches the server; `grpc-timeout` is propagated; a server error status arrives intact, and
 * one sent trailers-only counts against its endpoint by the gRPC rule (INTERNAL does,
 * FAILED_PRECONDITION does not).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/proxy/proxy-server.js';
import { startProxy, waitFor } from './helpers.js';

const PROTO = `syntax = "proto3";
package evenlb.test;
service Echo {
  rpc Unary (Msg) returns (Msg);
  rpc Chat (stream Msg) returns (stream Msg);
  rpc Slow (Msg) returns (Msg);
}
message Msg { string text = 1; }
`;

interface Msg {
  text: string;
}

interface ServerHandle {
  readonly name: string;
  readonly server: grpc.Server;
  readonly key: string;
  unary: number;
  cancelled: number;
  /** Slow calls received. */
  slowStarted: number;
  lastDeadlineMs: number | undefined;
  /** Forwarding metadata of the last unary call. */
  lastForwarded: Record<string, string> | undefined;
}

type EchoClient = grpc.Client & {
  Unary(m: Msg, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: Msg) => void): grpc.ClientUnaryCall;
  Unary(
    m: Msg,
    md: grpc.Metadata,
    o: grpc.CallOptions,
    cb: (e: grpc.ServiceError | null, r?: Msg) => void,
  ): grpc.ClientUnaryCall;
  Chat(): grpc.ClientDuplexStream<Msg, Msg>;
  Slow(m: Msg, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: Msg) => void): grpc.ClientUnaryCall;
};

let dir = '';
let servers: ServerHandle[] = [];
let proxy: ProxyServer;
let client: EchoClient;
// biome-ignore lint/suspicious/noExplicitAny: grpc-js service definitions are untyped
let service: any;

async function startServer(name: string, address: string): Promise<ServerHandle> {
  const server = new grpc.Server();
  const h: ServerHandle = {
    name,
    server,
    key: '',
    unary: 0,
    cancelled: 0,
    slowStarted: 0,
    lastDeadlineMs: undefined,
    lastForwarded: undefined,
  };
  server.addService(service, {
    Unary(call: grpc.ServerUnaryCall<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) {
      h.unary++;
      const md = call.metadata;
      h.lastForwarded = Object.fromEntries(
        ['x-forwarded-for', 'x-forwarded-proto', 'via', 'x-forwarded-client-cert'].map((k) => [k, md.get(k).join(',')]),
      );
      if (call.request.text === 'fail') {
        cb({ code: grpc.status.FAILED_PRECONDITION, details: 'asked to fail' });
        return;
      }
      if (call.request.text === 'internal') {
        cb({ code: grpc.status.INTERNAL, details: 'broken' });
        return;
      }
      cb(null, { text: `${name}:${call.request.text}` });
    },
    Chat(call: grpc.ServerDuplexStream<Msg, Msg>) {
      call.on('data', (m: Msg) => call.write({ text: `${name}:${m.text}` }));
      call.on('end', () => call.end());
    },
    Slow(call: grpc.ServerUnaryCall<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) {
      h.slowStarted++;
      const d = call.getDeadline();
      h.lastDeadlineMs =
        d instanceof Date ? d.getTime() - Date.now() : typeof d === 'number' ? d - Date.now() : undefined;
      const t = setTimeout(() => cb(null, { text: 'late' }), 5000);
      call.on('cancelled', () => {
        h.cancelled++;
        clearTimeout(t);
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${address}:0`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  Object.assign(h, { key: `${address}:${port}` });
  return h;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'evenlb-grpc-'));
  const file = join(dir, 'echo.proto');
  writeFileSync(file, PROTO);
  const def = protoLoader.loadSync(file, { keepCase: true });
  // biome-ignore lint/suspicious/noExplicitAny: grpc-js package objects are untyped
  const pkg = grpc.loadPackageDefinition(def) as any;
  service = pkg.evenlb.test.Echo.service;
  servers = await Promise.all([1, 2, 3].map((i) => startServer(`s${i}`, `127.0.0.${40 + i}`)));
  proxy = await startProxy({
    listeners: [{ name: 'grpc', address: '127.0.0.1:0' }],
    clusters: [
      {
        name: 'echo',
        target: `static:///${servers.map((s) => s.key).join(',')}`,
        protocol: 'h2',
        policy: 'round-robin',
      },
    ],
  });
  const Ctor = pkg.evenlb.test.Echo as new (a: string, c: grpc.ChannelCredentials) => EchoClient;
  client = new Ctor(`127.0.0.1:${proxy.listenerPort('grpc')}`, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  await proxy?.close();
  for (const s of servers) s.server.forceShutdown();
  rmSync(dir, { recursive: true, force: true });
});

function unary(text: string, deadlineMs = 5000): Promise<Msg> {
  return new Promise((resolve, reject) =>
    client.Unary({ text }, { deadline: Date.now() + deadlineMs }, (e, r) => (e ? reject(e) : resolve(r as Msg))),
  );
}

describe('gRPC through the proxy', () => {
  it('spreads unary calls on one client connection evenly over 3 servers', async () => {
    for (const s of servers) s.unary = 0;
    const deadline = Date.now() + 15_000;
    let sent = 0;
    const worker = async (): Promise<void> => {
      while (sent < 600 && Date.now() < deadline) {
        sent++;
        const r = await unary(`m${sent}`);
        expect(r.text).toMatch(/^s[123]:m/);
      }
    };
    await Promise.all(Array.from({ length: 10 }, worker));
    const total = servers.reduce((a, s) => a + s.unary, 0);
    expect(total).toBeGreaterThanOrEqual(300);
    for (const s of servers) expect(Math.abs(s.unary / total - 1 / 3)).toBeLessThanOrEqual(0.04);
    // Forwarding headers reach the gRPC servers; a client-sent X-Forwarded-Client-Cert does not.
    for (const s of servers) s.lastForwarded = undefined;
    const md = new grpc.Metadata();
    md.set('x-forwarded-client-cert', 'Subject="CN=admin"');
    await new Promise<void>((resolve, reject) =>
      client.Unary({ text: 'hdr' }, md, {}, (e) => (e === null ? resolve() : reject(e))),
    );
    const seen = servers.find((s) => s.lastForwarded !== undefined)?.lastForwarded;
    expect(seen).toEqual({
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'http',
      via: '2 evenlb',
      'x-forwarded-client-cert': '',
    });
  });

  it('keeps a bidirectional stream working across many messages', async () => {
    const call = client.Chat();
    const got: string[] = [];
    call.on('data', (m: Msg) => got.push(m.text));
    const ended = new Promise<void>((resolve, reject) => {
      call.on('end', resolve);
      call.on('error', reject);
    });
    for (let i = 0; i < 50; i++) {
      call.write({ text: `x${i}` });
      if (i % 10 === 9) await waitFor(() => got.length === i + 1, 5000, 'echo');
    }
    call.end();
    await ended;
    expect(got).toHaveLength(50);
    // One stream stays on one server.
    expect(new Set(got.map((t) => t.split(':')[0])).size).toBe(1);
  });

  it('passes a server error status through intact', async () => {
    await expect(unary('fail')).rejects.toMatchObject({
      code: grpc.status.FAILED_PRECONDITION,
      details: 'asked to fail',
    });
  });

  it('counts a trailers-only error status (grpc-status in the response head) by the gRPC rule', async () => {
    // grpc-js answers an error raised before any message as trailers-only: one HEADERS frame
    // with END_STREAM carrying grpc-status, no trailers after it.
    const stats = () => proxy.clusters.get('echo')?.stats();
    // The client may see the status before the proxy ends the stream's attempt: wait for that.
    const settled = () => waitFor(() => stats()?.inFlight === 0, 5000, 'the attempt ended');
    await settled();
    const before = stats()?.errors ?? 0;
    await expect(unary('fail')).rejects.toMatchObject({ code: grpc.status.FAILED_PRECONDITION });
    await settled();
    // FAILED_PRECONDITION is the application's answer: not a failure of the endpoint.
    expect(stats()?.errors).toBe(before);
    await expect(unary('internal')).rejects.toMatchObject({ code: grpc.status.INTERNAL, details: 'broken' });
    await settled();
    expect(stats()?.errors).toBe(before + 1);
  });

  it('propagates a client cancel (RST_STREAM) to the server', async () => {
    const before = servers.reduce((a, s) => a + s.cancelled, 0);
    const started = servers.reduce((a, s) => a + s.slowStarted, 0);
    const call = client.Slow({ text: 'wait' }, {}, () => {});
    await waitFor(() => servers.reduce((a, s) => a + s.slowStarted, 0) === started + 1, 5000, 'the call at a server');
    call.cancel();
    await waitFor(() => servers.reduce((a, s) => a + s.cancelled, 0) === before + 1, 5000, 'server-side cancel');
  });

  it('propagates grpc-timeout: the server sees the deadline and the call ends with DEADLINE_EXCEEDED', async () => {
    const err = await new Promise<grpc.ServiceError>((resolve) =>
      client.Slow({ text: 'wait' }, { deadline: Date.now() + 800 }, (e) => resolve(e as grpc.ServiceError)),
    );
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    const seen = servers.map((s) => s.lastDeadlineMs).filter((d) => d !== undefined) as number[];
    expect(seen.length).toBeGreaterThan(0);
    expect(Math.min(...seen)).toBeLessThanOrEqual(800);
  });
});

describe('HTTP/1.1 client to an h2 cluster', () => {
  it('forwards the request over HTTP/2 and relays the answer', async () => {
    const http = await import('node:http');
    const before = servers.reduce((a, s) => a + s.unary, 0);
    const res = await new Promise<{ status: number; grpcStatus: unknown }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: proxy.listenerPort('grpc'),
          method: 'POST',
          path: '/evenlb.test.Echo/Unary',
          headers: { 'content-type': 'application/grpc', te: 'trailers' },
          agent: false,
        },
        (r) => {
          r.resume();
          r.on('end', () =>
            resolve({ status: r.statusCode ?? 0, grpcStatus: r.trailers['grpc-status'] ?? r.headers['grpc-status'] }),
          );
        },
      );
      req.on('error', reject);
      // One empty gRPC message: no compression flag, zero length.
      req.end(Buffer.from([0, 0, 0, 0, 0]));
    });
    expect(res.status).toBe(200);
    expect(res.grpcStatus).toBe('0');
    expect(servers.reduce((a, s) => a + s.unary, 0)).toBe(before + 1);
  });
});

describe('gRPC drain when an endpoint leaves', () => {
  it('keeps an open stream on the removed server while new calls go to the others', async () => {
    const { renameSync } = await import('node:fs');
    const file = join(dir, 'endpoints.json');
    const write = (list: ServerHandle[]): void => {
      writeFileSync(
        `${file}.tmp`,
        JSON.stringify(list.map((s) => ({ address: s.key.split(':')[0], port: Number(s.key.split(':')[1]) }))),
      );
      renameSync(`${file}.tmp`, file);
    };
    write(servers);
    const drainProxy = await startProxy({
      drainTimeoutMs: 1000,
      listeners: [{ name: 'g', address: '127.0.0.1:0' }],
      clusters: [{ name: 'echo', target: `file://${file}`, protocol: 'h2', policy: 'round-robin' }],
    });
    const def = protoLoader.loadSync(join(dir, 'echo.proto'), { keepCase: true });
    // biome-ignore lint/suspicious/noExplicitAny: grpc-js package objects are untyped
    const pkg = grpc.loadPackageDefinition(def) as any;
    const Ctor = pkg.evenlb.test.Echo as new (a: string, c: grpc.ChannelCredentials) => EchoClient;
    const c = new Ctor(`127.0.0.1:${drainProxy.listenerPort('g')}`, grpc.credentials.createInsecure());
    try {
      const call = c.Chat();
      const got: string[] = [];
      call.on('data', (m: Msg) => got.push(m.text));
      const ended = new Promise<void>((resolve, reject) => {
        call.on('end', resolve);
        call.on('error', reject);
      });
      call.write({ text: 'first' });
      await waitFor(() => got.length === 1, 5000, 'first echo');
      const pinned = (got[0] as string).split(':')[0];
      // Remove the stream's server from discovery.
      write(servers.filter((s) => s.name !== pinned));
      await waitFor(
        () => drainProxy.clusters.get('echo')?.balancer.picker.endpoints.length === servers.length - 1,
        5000,
        'discovery update',
      );
      const unaries: string[] = [];
      for (let i = 0; i < 10; i++) {
        unaries.push(
          await new Promise<string>((resolve, reject) =>
            c.Unary({ text: 'u' }, { deadline: Date.now() + 2000 }, (e, m) =>
              e ? reject(e) : resolve((m as Msg).text),
            ),
          ),
        );
      }
      expect(unaries.every((t) => !t.startsWith(`${pinned}:`))).toBe(true);
      // The open stream still works, on its original server.
      call.write({ text: 'second' });
      await waitFor(() => got.length === 2, 5000, 'second echo');
      expect(got[1]).toBe(`${pinned}:second`);
      call.end();
      await ended;
    } finally {
      c.close();
      await drainProxy.close();
    }
  });
});
