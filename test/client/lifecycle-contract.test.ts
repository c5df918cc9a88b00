/**
 * undici's close/destroy contract, kept by every balancing client (`BalancedAgent`,
 * `createHttpAgent`, `createWebhookClient` for a Service and for a URL), tried as a user would
 * against real TLS servers on loopback:
 *
 * - `close()` stops new work, waits for in-flight work and always settles — after a TLS
 *   host-name mismatch, after a refused connect, after a normal request;
 * - while an upstream hangs, `close()` waits; `destroy()` then fails the hung request, settles
 *   within a second and settles the pending `close()` as well;
 * - both are idempotent, and a request after either fails at once with `EVENLB_CLOSED`.
 *
 * Regression tests for two bugs: `close()` never settled after an `ERR_TLS_CERT_ALTNAME_INVALID`
 * failure (undici's Client kept counting the failed request), and `destroy()` during a waiting
 * `close()` returned that same pending promise (so a stuck shutdown could not be escalated).
 */
import https from 'node:https';
import { request } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { BalancedAgent, createHttpAgent, createWebhookClient, StaticEndpointSource } from '../../src/index.js';
import { testCertificates } from '../support/test-certificates.js';
import { freePort, listenTracked } from '../support/tracked-server.js';

const SERVICE = { namespace: 'default', name: 'test-service', path: '/validate' };
const SERVICE_HOST = 'test-service.default.svc';
const ROUTE = `${SERVICE_HOST}:443`;
/** The contract's bound for `destroy()` (and for a `close()` with nothing left to wait for). */
const SETTLE_MS = 1_000;

type Mode = 'answer' | 'hang';

interface Upstream {
  readonly port: number;
  /** Requests received so far. */
  readonly received: number;
  close(): Promise<void>;
}

/** An HTTPS server on 127.0.0.1 whose certificate names `certName`; it answers an AdmissionReview or never answers. */
async function startUpstream(certName: string, mode: Mode): Promise<Upstream> {
  const pki = testCertificates(certName);
  let received = 0;
  const server = https.createServer({ key: pki.key, cert: pki.cert }, (req, res) => {
    received++;
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (mode === 'hang') return;
      const uid = body === '' ? 'x' : (JSON.parse(body) as { request?: { uid?: string } }).request?.uid;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid } }));
    });
  });
  const tracked = await listenTracked(server, '127.0.0.1', 'secureConnection');
  return {
    port: tracked.port,
    get received() {
      return received;
    },
    close: tracked.close,
  };
}

/** One client under test, reduced to one call plus the two shutdown methods. */
interface Subject {
  /** Resolves with 'ok' or rejects with the call's error. */
  call(): Promise<string>;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

const review = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u-1' } };

const subjects: Record<string, (port: number, ca: string) => Subject> = {
  BalancedAgent(port, ca) {
    const agent = new BalancedAgent({
      routes: { [ROUTE]: new StaticEndpointSource([{ address: '127.0.0.1', port }]) },
      tls: { ca },
    });
    return {
      call: () =>
        request(`https://${SERVICE_HOST}/`, { dispatcher: agent }).then(async (r) => {
          await r.body.text();
          return 'ok';
        }),
      close: () => agent.close(),
      destroy: () => agent.destroy(),
    };
  },
  createHttpAgent(port, ca) {
    const agent = createHttpAgent({
      protocol: 'https:',
      routes: { [ROUTE]: new StaticEndpointSource([{ address: '127.0.0.1', port }]) },
      tls: { ca },
    });
    return {
      call: () =>
        new Promise<string>((resolve, reject) => {
          const req = https.request(`https://${SERVICE_HOST}/`, { agent }, (res) => {
            res.resume();
            res.once('end', () => resolve('ok'));
            res.once('error', reject);
          });
          req.once('error', reject);
          req.end();
        }),
      close: () => agent.close(),
      destroy: () => agent.destroy(),
    };
  },
  'createWebhookClient (service)'(port, ca) {
    const client = createWebhookClient(
      { service: SERVICE, caBundle: Buffer.from(ca).toString('base64') },
      { endpoints: new StaticEndpointSource([{ address: '127.0.0.1', port }]), timeoutMs: 60_000 },
    );
    return {
      call: () => client.call(review).then(() => 'ok'),
      close: () => client.close(),
      destroy: () => client.destroy(),
    };
  },
  'createWebhookClient (url)'(port, ca) {
    const client = createWebhookClient(
      { url: `https://localhost:${port}/validate`, caBundle: Buffer.from(ca).toString('base64') },
      { timeoutMs: 60_000 },
    );
    return {
      call: () => client.call(review).then(() => 'ok'),
      close: () => client.close(),
      destroy: () => client.destroy(),
    };
  },
};

/** The certificate name each subject's server needs to pass verification. */
const goodName = (subject: string) => (subject === 'createWebhookClient (url)' ? 'localhost' : SERVICE_HOST);

/** Resolves with how the promise settled, or 'pending' if it has not within `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<'resolved' | 'rejected' | 'pending'> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve('pending'), ms);
    p.then(
      () => {
        clearTimeout(t);
        resolve('resolved');
      },
      () => {
        clearTimeout(t);
        resolve('rejected');
      },
    );
  });
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code ?? String(e),
  );

/** What breaks the first call, and the error code it fails with. */
const failures = [
  {
    name: 'a TLS host-name mismatch',
    certName: 'other.default.svc',
    refused: false,
    code: 'ERR_TLS_CERT_ALTNAME_INVALID',
  },
  { name: 'a refused connect', certName: undefined, refused: true, code: 'ECONNREFUSED' },
  { name: 'nothing (a normal call)', certName: undefined, refused: false, code: 'ok' },
] as const;

describe('close/destroy contract', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  for (const subjectName of Object.keys(subjects)) {
    const make = subjects[subjectName] as (port: number, ca: string) => Subject;

    for (const f of failures) {
      test(`${subjectName}: close() settles after ${f.name}; later calls fail with EVENLB_CLOSED`, async () => {
        const certName = f.certName ?? goodName(subjectName);
        const upstream = await startUpstream(certName, 'answer');
        cleanup.push(() => upstream.close());
        const port = f.refused ? await freePort() : upstream.port;
        const subject = make(port, testCertificates(certName).ca);
        cleanup.push(() => subject.destroy());
        const first = await codeOf(subject.call());
        if (f.code === 'ok') expect(first).toBe('ok');
        else expect(first === f.code || first.includes(f.code) || first === 'EVENLB_CONNECT_FAILED').toBe(true);
        expect(await within(subject.close(), SETTLE_MS * 5)).toBe('resolved');
        expect(await codeOf(subject.call())).toBe('EVENLB_CLOSED');
        // Idempotent, in either order.
        expect(await within(subject.close(), SETTLE_MS)).toBe('resolved');
        expect(await within(subject.destroy(), SETTLE_MS)).toBe('resolved');
      });
    }

    test(`${subjectName}: a hung upstream holds close(); destroy() fails it, settles within 1 s and settles close()`, async () => {
      const upstream = await startUpstream(goodName(subjectName), 'hang');
      cleanup.push(() => upstream.close());
      const subject = make(upstream.port, testCertificates(goodName(subjectName)).ca);
      cleanup.push(() => subject.destroy());
      const hung = codeOf(subject.call());
      const deadline = Date.now() + 5_000;
      while (upstream.received === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      expect(upstream.received).toBe(1);
      const closing = subject.close();
      expect(await within(closing, 150)).toBe('pending');
      expect(await codeOf(subject.call())).toBe('EVENLB_CLOSED');
      const destroying = subject.destroy();
      expect(await within(destroying, SETTLE_MS)).toBe('resolved');
      expect(await within(closing, SETTLE_MS)).toBe('resolved');
      expect(await within(hung, SETTLE_MS)).toBe('resolved');
      expect(await hung).not.toBe('ok');
      expect(await within(subject.destroy(), SETTLE_MS)).toBe('resolved');
      expect(await within(subject.close(), SETTLE_MS)).toBe('resolved');
    });
  }
});
