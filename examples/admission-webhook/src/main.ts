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

const { server } = createWebhookServer({
  key: readFileSync(env.TLS_KEY_FILE ?? '/tls/tls.key'),
  cert: readFileSync(env.TLS_CERT_FILE ?? '/tls/tls.crt'),
  requiredLabel: env.REQUIRED_LABEL ?? 'team',
  recycle: {
    maxRequestsPerConnection: int('MAX_REQUESTS_PER_CONNECTION', 1000),
    maxConnectionAgeMs: int('MAX_CONNECTION_AGE_MS', 300_000),
    graceMs: int('GRACE_MS', 25_000),
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
