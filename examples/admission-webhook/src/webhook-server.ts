/**
 * The webhook's HTTPS server: `POST /validate` takes an AdmissionReview and answers one,
 * `GET /healthz` answers `ok` for the readiness probe. kube-apiserver reaches it through the
 * Service and kube-proxy, keeping its connections open: the connection recycler closes each one
 * after `maxRequestsPerConnection` requests or `maxConnectionAgeMs`, so the API servers
 * reconnect — and get a fresh random endpoint — and the replicas share the load, including
 * replicas added by a rollout or an autoscaler.
 *
 * In your own project import from `evenlb/server`; this example imports the repository's
 * sources so it is tested against them.
 */
import https from 'node:https';
import { type ConnectionRecycler, type RecyclerOptions, recycleConnections } from '../../../src/server/index.js';
import { parseAdmissionReview, reviewPod } from './admission-review.js';

/** kube-apiserver sends at most ~3 MiB; anything larger is not an AdmissionReview. */
const MAX_BODY_BYTES = 3 * 1024 * 1024;

export interface WebhookServerOptions {
  readonly key: string | Buffer;
  readonly cert: string | Buffer;
  /** Label every Pod must carry. */
  readonly requiredLabel: string;
  /** Connection recycling; see `recycleConnections`. */
  readonly recycle: RecyclerOptions;
}

export interface WebhookServer {
  readonly server: https.Server;
  readonly recycler: ConnectionRecycler;
}

/**
 * Creates (does not start) the webhook server.
 *
 * @example
 * const { server } = createWebhookServer({ key, cert, requiredLabel: 'team', recycle: { maxRequestsPerConnection: 1000 } });
 * server.listen(8443);
 */
export function createWebhookServer(options: WebhookServerOptions): WebhookServer {
  const server = https.createServer({ key: options.key, cert: options.cert }, (req, res) => {
    if (req.method === 'GET' && req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (req.method !== 'POST' || req.url?.split('?')[0] !== '/validate') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (bytes > MAX_BODY_BYTES) {
        res.writeHead(413, { 'content-type': 'text/plain' }).end('request too large');
        return;
      }
      let review: ReturnType<typeof parseAdmissionReview>;
      try {
        review = parseAdmissionReview(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        review = undefined;
      }
      if (review === undefined) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('expected an admission.k8s.io/v1 AdmissionReview');
        return;
      }
      const body = JSON.stringify(reviewPod(review, options.requiredLabel));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    });
  });
  // Attach before listen(): every connection is known to the recycler and to the drain.
  const recycler = recycleConnections(server, options.recycle);
  return { server, recycler };
}
