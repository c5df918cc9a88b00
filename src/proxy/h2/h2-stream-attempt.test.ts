/**
 * How a finished upstream HTTP/2 stream ends its attempt (outlier detection, stats): a 5xx is
 * an error, a reset or a stream closed without a response a transport error, and a
 * `grpc-status` counts by the gRPC policy's own rule (`grpcOutcome`: UNKNOWN,
 * DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE and DATA_LOSS are failures, CANCELLED an abort).
 */
import http2 from 'node:http2';
import { describe, expect, test } from 'vitest';
import { streamOutcome } from './h2-stream-attempt.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_INTERNAL_ERROR } = http2.constants;

const cases: [string, number, number, unknown, string][] = [
  ['200', NGHTTP2_NO_ERROR, 200, undefined, 'success'],
  ['200 grpc-status 0', NGHTTP2_NO_ERROR, 200, '0', 'success'],
  ['200 grpc-status 5 NOT_FOUND (the application answered)', NGHTTP2_NO_ERROR, 200, '5', 'success'],
  ['200 grpc-status 13 INTERNAL', NGHTTP2_NO_ERROR, 200, '13', 'http-error'],
  ['200 grpc-status 4 DEADLINE_EXCEEDED', NGHTTP2_NO_ERROR, 200, '4', 'http-error'],
  ['200 grpc-status 14 UNAVAILABLE', NGHTTP2_NO_ERROR, 200, '14', 'transport-error'],
  ['200 grpc-status 1 CANCELLED', NGHTTP2_NO_ERROR, 200, '1', 'aborted'],
  ['404', NGHTTP2_NO_ERROR, 404, undefined, 'success'],
  ['503', NGHTTP2_NO_ERROR, 503, undefined, 'http-error'],
  ['closed without a response', NGHTTP2_NO_ERROR, 0, undefined, 'transport-error'],
  ['REFUSED_STREAM', NGHTTP2_REFUSED_STREAM, 0, undefined, 'transport-error'],
  ['reset after the response head', NGHTTP2_INTERNAL_ERROR, 200, undefined, 'transport-error'],
];

describe('streamOutcome', () => {
  for (const [name, rst, status, grpc, outcome] of cases) {
    test(name, () => expect(streamOutcome(rst, status, grpc)).toBe(outcome));
  }
});
