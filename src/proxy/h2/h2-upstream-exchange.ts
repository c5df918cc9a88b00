/**
 * One HTTP/2 client stream forwarded to an HTTP/2 upstream (gRPC end to end). The stream is
 * balanced on its own: it takes an attempt from the cluster (`clusterInternals(c).acquire()`),
 * a place on a session to `attempt.endpoint` from the `H2SessionPool`, and a session that fails
 * to connect goes through the cluster's one retry policy (`attempt.retry({ type:
 * 'connect-failure' })`, so `retries.connectFailures` applies and each retry is counted once, by
 * the cluster). The stream's end ends the attempt with its outcome (`streamOutcome`): a status
 * of 500 or more is an `http-error`, a `grpc-status` — in the trailers, or in the response head
 * of a trailers-only response — counts by the gRPC policy's rule; an upstream reset, a close
 * without a response or the `grpc-timeout` deadline is a `transport-error`; the client going
 * away `aborted`. The end also carries what the response said (`h2AttemptResponse`): 429 or 503,
 * or RESOURCE_EXHAUSTED, is pushback, and the `endpoint-load-metrics` trailer (or header) is the
 * endpoint's load report when the cluster's policy reads reports.
 *
 * Both bodies are piped (flow control on both sides gives backpressure), trailers are relayed
 * (`grpc-status` lives there), a client RST_STREAM cancels the upstream stream and an upstream
 * reset is passed back with its code, and a `grpc-timeout` header is forwarded and enforced
 * here as well. A stream the upstream refuses (REFUSED_STREAM, or above a GOAWAY's last stream
 * id) is not retried: its body has already been piped away, and the retry policy has no reason
 * for it; the client gets 502 `upstream-reset`.
 *
 * The cluster's deadlines hold on this path as on the HTTP/1.1 one (`H2Deadlines`): the response
 * head within `requestTimeoutMs` of the stream being sent (else the upstream stream is cancelled
 * and the client gets 504 `upstream-timeout`, in gRPC form for gRPC clients), then DATA at least
 * every `bodyTimeoutMs` (else both streams are reset: RST_STREAM CANCEL to the upstream,
 * INTERNAL_ERROR to an HTTP/2 client, a cut connection for an HTTP/1.x client).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2, { type ServerHttp2Stream } from 'node:http2';
import type { Attempt } from '../../cluster/attempt.js';
import { clusterInternals } from '../../cluster/cluster-internals.js';
import type { RequestOutcome } from '../../cluster/cluster-options.js';
import { h2AttemptResponse } from '../../cluster/load-feedback.js';
import type { TimerHandle } from '../../core/clock.js';
import { downstreamResponseHeaders } from '../routing/hop-headers.js';
import { LOCAL_REPLIES, type LocalReason, reasonForError, replyHttp1, replyHttp2 } from '../routing/local-reply.js';
import type { ProxyCluster } from '../upstream/proxy-cluster.js';
import { H2Deadlines } from './h2-deadlines.js';
import type { H2SessionLease, H2SessionPool } from './h2-session-pool.js';
import { connectStream, streamOutcome } from './h2-stream-attempt.js';

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_INTERNAL_ERROR } = http2.constants;
const END_STREAM = 0x1;

/** True when `cluster`'s policy reads load reports (the response's report is then taken). */
const reads = (cluster: ProxyCluster): boolean => clusterInternals(cluster.cluster).readsReports;

type H2Headers = Record<string, string | string[] | number | undefined>;

/** `grpc-timeout` (`<digits><unit>`, units H M S m u n) in ms; undefined when absent or malformed. */
function parseGrpcTimeoutMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^([0-9]{1,8})([HMSmun])$/.exec(value);
  if (m === null) return undefined;
  const n = Number(m[1]);
  switch (m[2]) {
    case 'H':
      return n * 3_600_000;
    case 'M':
      return n * 60_000;
    case 'S':
      return n * 1000;
    case 'm':
      return n;
    case 'u':
      return n / 1000;
    default:
      return n / 1_000_000;
  }
}

/**
 * An HTTP/2 request header object: the given pseudo-headers plus a forwarded header list from
 * `upstreamRequestHeaders` (its `host` becomes `:authority`; repeated names become arrays, so
 * split `cookie` fields stay separate).
 */
function h2RequestHeaders(pseudo: H2Headers, forwarded: readonly string[]): H2Headers {
  const out: H2Headers = { ...pseudo };
  for (let i = 0; i < forwarded.length; i += 2) {
    const name = (forwarded[i] as string).toLowerCase();
    const value = forwarded[i + 1] as string;
    if (name === 'host') {
      out[':authority'] = value;
      continue;
    }
    const prev = out[name];
    out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [String(prev), value];
  }
  return out;
}

/** How `openStream` answers the client when there is no stream. */
interface OpenAnswer {
  /** The client is gone. */
  gone(): boolean;
  /** A local reply (and `done`). */
  reply(reason: LocalReason): void;
  done(status: number, reason: string | undefined): void;
}

/**
 * The attempt, the session lease and the upstream stream for one request, or undefined when
 * there is none (the client was answered locally, or is gone).
 */
async function openStream(
  cluster: ProxyCluster,
  method: string,
  out: H2Headers,
  endStream: boolean,
  answer: OpenAnswer,
): Promise<{ attempt: Attempt; lease: H2SessionLease; up: http2.ClientHttp2Stream } | undefined> {
  const connected = await connectStream(cluster.cluster, cluster.h2 as H2SessionPool, method);
  if (connected instanceof Error) {
    answer.reply(reasonForError(connected));
    return undefined;
  }
  const { attempt, lease } = connected;
  if (answer.gone()) {
    lease.release();
    attempt.end('aborted');
    answer.done(0, 'client-closed');
    return undefined;
  }
  try {
    return { attempt, lease, up: lease.session.request(out, { endStream }) };
  } catch {
    lease.release();
    attempt.end('transport-error');
    answer.reply('upstream-error');
    return undefined;
  }
}

/**
 * Forwards `down` to an endpoint of the `h2` cluster `cluster`. `done(status, reason)` is called
 * once when both sides are finished.
 */
export async function forwardStreamToH2(
  down: ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  /** True when the client's HEADERS frame ended the stream (no request body). */
  endStream: boolean,
  cluster: ProxyCluster,
  /** The request headers to send, from `upstreamRequestHeaders` (forwarding headers added). */
  upstreamHeaders: readonly string[],
  done: (status: number, reason: string | undefined) => void,
): Promise<void> {
  const grpc = String(headers['content-type'] ?? '').startsWith('application/grpc');
  const method = String(headers[':method'] ?? 'POST');
  const reply = (reason: LocalReason): void => {
    replyHttp2(down, reason, grpc, method);
    done(LOCAL_REPLIES[reason].status, reason);
  };
  const pseudo: H2Headers = { ':method': headers[':method'], ':path': headers[':path'] };
  if (headers[':scheme'] !== undefined) pseudo[':scheme'] = headers[':scheme'];
  const opened = await openStream(cluster, method, h2RequestHeaders(pseudo, upstreamHeaders), endStream, {
    gone: () => down.closed || down.destroyed,
    reply,
    done,
  });
  if (opened === undefined) return;
  const { attempt, lease, up } = opened;
  let status = 0;
  /** The response head: a trailers-only response's `grpc-status` is there (no trailers follow). */
  let head: http2.IncomingHttpHeaders | undefined;
  let trailers: http2.IncomingHttpHeaders | undefined;
  let finished = false;
  /** The stream was cancelled by the client (or a deadline): not the endpoint's fault, or its timeout. */
  let cancelled: RequestOutcome | undefined;
  /** The local reply a deadline answered with. */
  let timedOut: LocalReason | undefined;
  let timer: TimerHandle | undefined;
  const deadlines = new H2Deadlines(cluster, up, {
    head: () => {
      cancelled ??= 'transport-error';
      timedOut = 'upstream-timeout';
      if (!down.headersSent) replyHttp2(down, 'upstream-timeout', grpc, method);
      else if (!down.closed) down.close(NGHTTP2_INTERNAL_ERROR);
    },
    body: () => {
      cancelled ??= 'transport-error';
      timedOut = 'upstream-timeout';
      if (!down.closed) down.close(NGHTTP2_INTERNAL_ERROR);
    },
  });
  const finish = (outcome: RequestOutcome, reason: string | undefined): void => {
    if (finished) return;
    finished = true;
    timer?.cancel();
    deadlines.stop();
    lease.release();
    attempt.end(outcome, h2AttemptResponse(status, head, trailers, reads(cluster)));
    done(timedOut !== undefined && !down.headersSent ? 504 : status, timedOut ?? reason);
  };

  const timeoutMs = parseGrpcTimeoutMs(headers['grpc-timeout'] as string | undefined);
  if (timeoutMs !== undefined) {
    timer = cluster.clock.setTimeout(() => {
      cancelled ??= 'transport-error';
      if (!down.headersSent) replyHttp2(down, 'deadline-exceeded', grpc, method);
      else if (!down.closed) down.close(NGHTTP2_CANCEL);
      if (!up.closed) up.close(NGHTTP2_CANCEL);
    }, timeoutMs + 50);
  }

  if (!endStream) down.pipe(up);

  up.on('response', (h, flags) => {
    status = Number(h[':status'] ?? 0);
    head = h;
    deadlines.responded();
    if (down.closed) return;
    const resp = downstreamResponseHeaders(h as Record<string, string | string[] | undefined>, '2') as H2Headers;
    resp[':status'] = status;
    if ((flags & END_STREAM) !== 0) {
      down.respond(resp, { endStream: true });
      return;
    }
    down.respond(resp, { waitForTrailers: true });
  });
  up.on('data', () => deadlines.read());
  up.on('trailers', (t) => {
    trailers = t;
  });
  down.on('wantTrailers', () => {
    // Always a trailers frame, empty when the upstream sent none: it carries END_STREAM. A
    // NO_ERROR reset instead waits for the client's half of the stream, and a client still
    // sending (or holding) a body would never see the response end.
    const t: H2Headers = {};
    if (trailers !== undefined) for (const k in trailers) if (k.charCodeAt(0) !== 58) t[k] = trailers[k];
    down.sendTrailers(t);
  });
  up.pipe(down);

  up.on('error', () => {
    // 'close' follows and carries the reset code.
  });
  down.on('error', () => {});
  up.once('close', () => {
    const code = up.rstCode ?? NGHTTP2_NO_ERROR;
    if (timedOut === undefined && code !== NGHTTP2_NO_ERROR && !down.closed) {
      if (!down.headersSent) replyHttp2(down, 'upstream-reset', grpc, method);
      else down.close(code === NGHTTP2_CANCEL ? NGHTTP2_CANCEL : NGHTTP2_INTERNAL_ERROR);
    } else if (timedOut === undefined && status === 0 && !down.closed) {
      replyHttp2(down, 'upstream-reset', grpc, method);
    }
    finish(cancelled ?? streamOutcome(code, status, trailers?.['grpc-status'] ?? head?.['grpc-status']), undefined);
  });
  down.once('close', () => {
    // A client reset (or a lost client connection) cancels the upstream stream.
    const code = down.rstCode;
    if (up.closed) return;
    if (code !== undefined && code !== NGHTTP2_NO_ERROR) {
      cancelled ??= 'aborted';
      up.close(code);
    } else if (!down.writableFinished) {
      cancelled ??= 'aborted';
      up.close(NGHTTP2_CANCEL);
    }
  });
}

/**
 * Forwards an HTTP/1.x client request (node:http) to an HTTP/2 upstream (an `h2` cluster). The
 * request is balanced like a stream; trailers come back as HTTP/1.1 chunked trailers when the
 * response is chunked.
 */
export async function forwardRequestToH2(
  req: IncomingMessage,
  res: ServerResponse,
  upstreamHeaders: readonly string[],
  hasBody: boolean,
  cluster: ProxyCluster,
  done: (status: number, reason: string | undefined) => void,
): Promise<void> {
  const reply = (reason: LocalReason): void => {
    replyHttp1(res, reason);
    done(LOCAL_REPLIES[reason].status, reason);
  };
  const out = h2RequestHeaders(
    { ':method': req.method ?? 'GET', ':path': req.url ?? '/', ':scheme': 'http' },
    upstreamHeaders,
  );
  const opened = await openStream(cluster, req.method ?? 'GET', out, !hasBody, {
    gone: () => res.destroyed || res.writableEnded,
    reply,
    done,
  });
  if (opened === undefined) return;
  const { attempt, lease, up } = opened;
  let status = 0;
  let head: http2.IncomingHttpHeaders | undefined;
  let trailers: http2.IncomingHttpHeaders | undefined;
  let finished = false;
  let cancelled = false;
  let timedOut = false;
  const deadlines = new H2Deadlines(cluster, up, {
    head: () => {
      timedOut = true;
      reply('upstream-timeout');
    },
    body: () => {
      timedOut = true;
      res.destroy();
    },
  });
  const finish = (outcome: RequestOutcome, reason: string | undefined): void => {
    if (finished) return;
    finished = true;
    deadlines.stop();
    lease.release();
    const response = h2AttemptResponse(status, head, trailers, reads(cluster));
    attempt.end(cancelled ? 'aborted' : timedOut ? 'transport-error' : outcome, response);
    if (!timedOut || res.headersSent) done(status, reason);
  };
  if (hasBody) req.pipe(up);
  up.on('response', (h) => {
    status = Number(h[':status'] ?? 0);
    head = h;
    deadlines.responded();
    res.writeHead(status, downstreamResponseHeaders(h as Record<string, string | string[] | undefined>, '2'));
  });
  up.on('data', () => deadlines.read());
  up.on('trailers', (t) => {
    trailers = t;
    const list: [string, string][] = [];
    for (const k in t) if (k.charCodeAt(0) !== 58) list.push([k, String(t[k])]);
    if (list.length > 0 && res.chunkedEncoding) res.addTrailers(list);
  });
  up.pipe(res);
  up.on('error', () => {});
  up.once('close', () => {
    if (timedOut) {
      finish('transport-error', 'upstream-timeout');
      return;
    }
    const code = up.rstCode ?? NGHTTP2_NO_ERROR;
    if (code !== NGHTTP2_NO_ERROR || status === 0) {
      if (!res.headersSent) replyHttp1(res, 'upstream-reset');
      else res.destroy();
      finish('transport-error', 'upstream-reset');
      return;
    }
    finish(streamOutcome(code, status, undefined), undefined);
  });
  res.once('close', () => {
    if (up.closed) return;
    cancelled = !res.writableFinished && !timedOut;
    up.close(NGHTTP2_CANCEL);
  });
}
