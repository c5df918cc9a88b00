/**
 * Shared helpers for the HTTP/1.1 head parser tests: parse a latin1 string as a request or response
 * head with the default limits, parse one that must succeed, build a request head from its lines, and
 * the error values the parser returns for refused heads.
 */
import {
  type HeadError,
  isHeadError,
  parseRequestHead,
  parseResponseHead,
  type RequestHead,
  type ResponseHead,
} from './message-head.js';

export const MAX_BYTES = 16 * 1024;
export const MAX_COUNT = 100;

/** The string's bytes as latin1, one byte per character. */
export function b(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

/** Parses `s` as a request head from offset 0. */
export function req(s: string, maxBytes = MAX_BYTES, maxCount = MAX_COUNT): RequestHead | HeadError | undefined {
  return parseRequestHead(b(s), 0, maxBytes, maxCount);
}

/** Parses `s` as a response head from offset 0. */
export function res(s: string, maxBytes = MAX_BYTES, maxCount = MAX_COUNT): ResponseHead | HeadError | undefined {
  return parseResponseHead(b(s), 0, maxBytes, maxCount);
}

/** Parses a request that must succeed. */
export function okReq(s: string, maxBytes = MAX_BYTES, maxCount = MAX_COUNT): RequestHead {
  const r = req(s, maxBytes, maxCount);
  if (r === undefined || isHeadError(r)) throw new Error(`expected a request head, got ${JSON.stringify(r)}`);
  return r;
}

/** Parses a response that must succeed. */
export function okRes(s: string, maxBytes = MAX_BYTES, maxCount = MAX_COUNT): ResponseHead {
  const r = res(s, maxBytes, maxCount);
  if (r === undefined || isHeadError(r)) throw new Error(`expected a response head, got ${JSON.stringify(r)}`);
  return r;
}

export const BAD = { error: 400, reason: 'bad-request' };
export const TOO_LARGE = { error: 431, reason: 'header-too-large' };
export const TOO_MANY = { error: 431, reason: 'too-many-headers' };

/** A request whose head is `line` plus `fields`, each field line given without its CRLF. */
export function request(line: string, ...fields: string[]): string {
  return `${line}\r\n${fields.map((f) => `${f}\r\n`).join('')}\r\n`;
}
