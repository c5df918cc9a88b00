/**
 * Server-reported load over gRPC, with real grpc-js servers: `grpcLoadInterceptor` puts each
 * server's `LoadReporter` report in every call's trailing metadata, and the evenlb policy
 * records it when its policy reads reports (`report-weighted`), not otherwise; calls ending
 * RESOURCE_EXHAUSTED are pushback, so the server answering it gets well below a fair share;
 * `prequal` probes the servers' load documents on a port of their own (`serveLoadDocument`).
 */
import { createServer } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { evenlbServiceConfig, type GrpcRegistration, grpcLoadInterceptor, registerGrpc } from '../../src/grpc/index.js';
import { LoadReporter, type ServedLoadDocument, serveLoadDocument } from '../../src/server/index.js';
import { call, EchoClient, type EchoServer, startEchoServer } from './echo-servers.js';

const ADDRESSES = ['127.0.3.1', '127.0.3.2', '127.0.3.3'];
let servers: EchoServer[] = [];
let reporters: LoadReporter[] = [];
let documents: ServedLoadDocument[] = [];
let loadPort = 0;
let evenlb: GrpcRegistration;
const clients: EchoClient[] = [];

/** A port free on every test address (the load documents share it, as a Deployment's pods do). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, ADDRESSES[0], resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  evenlb = registerGrpc(grpc, { name: 'load-reports-test', random: new SeededRandom(5) });
  loadPort = await freePort();
  for (const [i, address] of ADDRESSES.entries()) {
    const reporter = new LoadReporter({ periodMs: 100, cpu: false });
    reporters.push(reporter);
    servers.push(
      await startEchoServer(`s${i + 1}`, address, 0, { interceptors: [grpcLoadInterceptor(grpc, reporter)] }),
    );
    const served = serveLoadDocument(reporter, { port: loadPort, host: address });
    documents.push(served);
    expect(await served.listening).toBe(true);
  }
});

afterAll(async () => {
  for (const c of clients) c.close();
  await evenlb.close();
  await Promise.all([...servers.map((s) => s.close()), ...documents.map((d) => d.close())]);
  for (const r of reporters) r.close();
  servers = [];
  reporters = [];
  documents = [];
});

function client(config: Parameters<typeof evenlbServiceConfig>[0]): EchoClient {
  const c = new EchoClient(`static:///${servers.map((s) => s.key).join(',')}`, grpc.credentials.createInsecure(), {
    'grpc.service_config': evenlbServiceConfig(config),
  });
  clients.push(c);
  return c;
}

const route = (name: string) => evenlb.stats().routes.find((r) => r.name === name);
const attached = () => reporters.reduce((n, r) => n + r.stats().reportsAttached, 0);

describe('gRPC: load reports in trailers, RESOURCE_EXHAUSTED as pushback, probes on a port of their own', () => {
  it('every call carries a report; report-weighted records each, least-request none', async () => {
    const reading = client({ policy: 'report-weighted', name: 'reading' });
    const before = attached();
    for (let i = 0; i < 60; i++) expect((await call(reading)).ok).toBe(true);
    expect(attached() - before).toBe(60);
    expect(route('reading')?.loadReports).toEqual({ recorded: 60, ignored: 0 });
    expect(route('reading')?.endpoints.reduce((n, e) => n + e.loadReports, 0)).toBe(60);

    const blind = client({ policy: 'least-request', name: 'blind' });
    for (let i = 0; i < 20; i++) expect((await call(blind)).ok).toBe(true);
    expect(route('blind')?.loadReports).toEqual({ recorded: 0, ignored: 0 });
  });

  it('a server answering RESOURCE_EXHAUSTED is pushed back: well below a fair share', async () => {
    const [full, ...others] = servers as [EchoServer, ...EchoServer[]];
    const c = client({ policy: 'least-request', name: 'pushback', outlierDetection: false });
    for (let i = 0; i < 10; i++) await call(c);
    for (const s of servers) s.served = 0;
    full.failWith = grpc.status.RESOURCE_EXHAUSTED;
    try {
      for (let i = 0; i < 300; i++) await call(c);
    } finally {
      full.failWith = undefined;
    }
    const mean = others.reduce((n, s) => n + s.served, 0) / others.length;
    process.stdout.write(`served while one pushes back: ${servers.map((s) => s.served).join('/')}\n`);
    expect(full.served / mean).toBeLessThan(0.5);
    const pushbacks = route('pushback')?.endpoints.map((e) => [e.key, e.pushbacks]);
    expect(pushbacks).toContainEqual([full.key, full.served]);
    for (const s of others) expect(pushbacks).toContainEqual([s.key, 0]);
  });

  it('prequal probes the load documents within its budget', async () => {
    const c = client({
      policy: 'prequal',
      policyOptions: { probesPerRequest: 0.2 },
      loadProbes: { port: loadPort },
      name: 'probing',
    });
    for (let i = 0; i < 100; i++) expect((await call(c)).ok).toBe(true);
    const deadline = performance.now() + 5_000;
    while ((route('probing')?.loadProbes.inFlight ?? 0) > 0 && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const probes = route('probing')?.loadProbes;
    expect(probes?.sent).toBeGreaterThan(0);
    expect(probes?.sent).toBeLessThanOrEqual(0.2 * 100 + 1);
    expect(probes?.answered).toBe(probes?.sent);
  });
});
