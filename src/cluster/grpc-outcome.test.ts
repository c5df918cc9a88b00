/**
 * The one gRPC failure rule the gRPC policy and the proxy's HTTP/2 path share: the default
 * failure codes, a channel's own codes, and `grpc-status` header values.
 */
import { describe, expect, it } from 'vitest';
import type { RequestOutcome } from './cluster-options.js';
import { DEFAULT_GRPC_FAILURE_CODES, grpcOutcome, grpcStatusOf } from './grpc-outcome.js';

describe('grpcOutcome', () => {
  const cases: [number, RequestOutcome][] = [
    [0, 'success'],
    [1, 'aborted'],
    [3, 'success'], // INVALID_ARGUMENT: the application's answer, not the endpoint's fault
    [5, 'success'],
    [2, 'http-error'],
    [4, 'http-error'],
    [13, 'http-error'],
    [14, 'transport-error'],
    [15, 'http-error'],
  ];
  for (const [code, outcome] of cases) {
    it(`status ${code} → ${outcome} by default`, () => expect(grpcOutcome(code)).toBe(outcome));
    it(`status ${code} → ${outcome} with the default codes passed`, () =>
      expect(grpcOutcome(code, new Set(DEFAULT_GRPC_FAILURE_CODES))).toBe(outcome));
  }

  it("a channel's own failure codes replace the defaults", () => {
    const onlyUnavailable = new Set([14]);
    expect(grpcOutcome(13, onlyUnavailable)).toBe('success');
    expect(grpcOutcome(14, onlyUnavailable)).toBe('transport-error');
    expect(grpcOutcome(1, onlyUnavailable)).toBe('aborted');
  });
});

describe('grpcStatusOf', () => {
  const cases: [unknown, number][] = [
    [undefined, 0],
    [null, 0],
    ['0', 0],
    ['14', 14],
    [['13'], 13],
    ['', 0],
    ['oops', 2],
    ['99', 2],
  ];
  for (const [value, code] of cases)
    it(`${JSON.stringify(value)} → ${code}`, () => expect(grpcStatusOf(value)).toBe(code));
});
