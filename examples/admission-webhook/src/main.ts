/**
 * Entry point of the example webhook (the container's command). Configuration from the
 * environment; TLS material from the mounted Secret. On SIGTERM it keeps serving for
 * `CLOSE_DELAY_MS` (while Kubernetes removes the Pod from the Service's endpoints), then drains:
 * stops accepting, answers in-flight reviews with `Connection: close`, waits up to `GRACE_MS`,
 * exits. `terminationGracePeriodSeconds` must exceed CLOSE_DELAY_MS + GRACE_MS.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { drainOnSignal } from '../../../src/server/index.js';
import { createWebhookServer } from './webhook-server.js';

const env = process.env;
const int = (name: string, fallback: number): number => {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    process.stderr.write(`${name} must be a non-negative integer; got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return value;
};
const log = (msg: string, fields: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), msg, ...fields })}\n`);

const fraction = (name: string, fallback: number): number => {
  const raw = env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    process.stderr.write(`${name} must be a non-negative number; got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return value;
};

// With FAIR_SHARE_PEERS (the webhook's own Service, e.g. k8s:///evenlb-webhook.policy:https) a
// replica closes connections only while it serves more than its share; the age and request
// limits stay behind it as a ceiling (0 = off). Without it, plain recycling by requests and age.
const peers = env.FAIR_SHARE_PEERS;
const fairShare = peers !== undefined && peers !== '';
const maxRequests = int('MAX_REQUESTS_PER_CONNECTION', fairShare ? 0 : 1000);
const maxAge = int('MAX_CONNECTION_AGE_MS', fairShare ? 1_800_000 : 300_000);
const { server } = createWebhookServer({
  key: readFileSync(env.TLS_KEY_FILE ?? '/tls/tls.key'),
  cert: readFileSync(env.TLS_CERT_FILE ?? '/tls/tls.crt'),
  requiredLabel: env.REQUIRED_LABEL ?? 'team',
  recycle: {
    ...(maxRequests > 0 ? { maxRequestsPerConnection: maxRequests } : {}),
    ...(maxAge > 0 ? { maxConnectionAgeMs: maxAge } : {}),
    graceMs: int('GRACE_MS', 25_000),
    ...(fairShare ? { fairShare: { peers, tolerance: fraction('FAIR_SHARE_TOLERANCE', 0.1) } } : {}),
  },
});

const drained = drainOnSignal(server, {
  signals: ['SIGTERM', 'SIGINT'],
  closeDelayMs: int('CLOSE_DELAY_MS', 5000),
  graceMs: int('GRACE_MS', 25_000),
});
process.once('SIGTERM', () => log('SIGTERM: draining'));
drained.done.then((result) => log('drained', { ...result }));

server.listen(int('PORT', 8443), env.HOST ?? '0.0.0.0', () => {
  log('listening', { port: (server.address() as AddressInfo).port });
});
