/**
 * `statusForError`: the one table from an error that ended a request before an upstream answer
 * to the local reply's status and `x-evenlb-reason`. Nothing reached an endpoint in the 503
 * cases; an `EVENLB_CLOSED` error (the proxy closed the cluster or its pool itself) is one of
 * them, not a failing upstream (it used to fall through to 502 `upstream-error`).
 */
import { describe, expect, test } from 'vitest';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import { bodiless, LOCAL_REPLIES, rawReply, statusForError } from './local-reply.js';

const coded = (code: string): Error => Object.assign(new Error(code), { code });

const cases: [string, Error, number, string][] = [
  ['service not found', new EvenlbError(ErrorCodes.SERVICE_NOT_FOUND, 'x'), 503, 'service-not-found'],
  ['discovery pending', new EvenlbError(ErrorCodes.DISCOVERY_PENDING, 'x'), 503, 'discovery-pending'],
  ['no endpoints', new EvenlbError(ErrorCodes.NO_ENDPOINTS, 'x'), 503, 'no-endpoints'],
  [
    'no endpoints, with the picker reason',
    new EvenlbError(ErrorCodes.NO_ENDPOINTS, 'x', { details: { reason: 'all-ejected' } }),
    503,
    'all-ejected',
  ],
  ['an h2 session pool closed', new EvenlbError(ErrorCodes.CLOSED, 'h2 session pool is closed'), 503, 'cluster-closed'],
  ['an HTTP/1.1 endpoint pool draining', coded(ErrorCodes.CLOSED), 503, 'cluster-closed'],
  ['connect failed', new EvenlbError(ErrorCodes.CONNECT_FAILED, 'x'), 503, 'connect-failed'],
  ['connection refused', coded('ECONNREFUSED'), 503, 'connect-failed'],
  ['connect timeout', coded('UND_ERR_CONNECT_TIMEOUT'), 503, 'connect-failed'],
  ['headers timeout', coded('UND_ERR_HEADERS_TIMEOUT'), 504, 'upstream-timeout'],
  ['evenlb timeout', new EvenlbError(ErrorCodes.TIMEOUT, 'x'), 504, 'upstream-timeout'],
  ['connection reset', coded('ECONNRESET'), 502, 'upstream-reset'],
  ['socket closed before the response', coded('UND_ERR_SOCKET'), 502, 'upstream-reset'],
  ['malformed response', coded('EVENLB_UPSTREAM_PROTOCOL'), 502, 'upstream-error'],
  ['TLS name mismatch', coded('ERR_TLS_CERT_ALTNAME_INVALID'), 502, 'upstream-error'],
  ['no code', new Error('x'), 502, 'upstream-error'],
];

describe('statusForError', () => {
  test.each(cases)('%s', (_name, err, status, reason) => {
    expect(statusForError(err)).toEqual({ status, reason });
  });
});

describe('the local-reply catalogue', () => {
  test('every reason has a status, a retry flag, a close flag and a gRPC status', () => {
    for (const [reason, spec] of Object.entries(LOCAL_REPLIES)) {
      expect(spec.status, reason).toBeGreaterThanOrEqual(400);
      expect(spec.grpcStatus, reason).toBeGreaterThan(0);
      // A reply that closes is about the request's own bytes; a retryable one never reached an endpoint.
      if (spec.status >= 502) expect(spec.closes, reason).toBe(false);
    }
  });

  test('a reply to HEAD has the head only; Connection: close when asked', () => {
    const get = rawReply('no-route', 'GET', false);
    const head = rawReply('no-route', 'HEAD', true);
    expect(get.endsWith('\r\n\r\nevenlb: 404 no-route\n')).toBe(true);
    expect(head.endsWith('\r\n\r\n')).toBe(true);
    expect(head).toContain('connection: close\r\n');
    expect(head).toContain('content-length: 21\r\n');
    expect(head.split('\r\n\r\n')[1]).toBe('');
  });

  test('no body for HEAD, 1xx, 204 and 304', () => {
    expect(bodiless('HEAD', 200)).toBe(true);
    expect(bodiless('GET', 100)).toBe(true);
    expect(bodiless('GET', 204)).toBe(true);
    expect(bodiless('GET', 304)).toBe(true);
    expect(bodiless('GET', 404)).toBe(false);
  });
});
