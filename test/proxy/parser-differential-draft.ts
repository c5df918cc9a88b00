/**
 * The request draft the HTTP/1.1 parser differential test's generator mutates: its parts (request
 * line, header lines and their terminators, body, pipelined tail), the seeded `pick` that records
 * each choice for a case's detailed tag, and the edits mutations share (set, add or remove a
 * header line, switch to chunked or Content-Length framing).
 */
import type { SeededRandom } from '../../src/core/random.js';

/** One request under construction: head lines, their terminators, body, what follows. */
export interface Draft {
  requestLine: string;
  method: string;
  target: string;
  version: string;
  /** Header lines without terminators. */
  lines: string[];
  /** Terminator after the request line and after each header line. */
  eols: string[];
  /** Terminator of the blank line ending the head. */
  endEol: string;
  prefix: string;
  body: string;
  tail: string;
  readonly tags: string[];
  /** Each mutation with the variants it chose. */
  readonly details: string[];
}

/** One generated case: bytes and the mutations that shaped them. */
export interface Case {
  readonly id: number;
  readonly bytes: Buffer;
  readonly tags: readonly string[];
  readonly details: readonly string[];
}

/** Choices made by the mutation being applied, for its detailed tag. */
let picks: string[] | undefined;

/** Runs `apply` and returns the choices `pick` made during it. */
export function recordPicks(apply: () => void): string[] {
  picks = [];
  try {
    apply();
    return picks;
  } finally {
    picks = undefined;
  }
}

export function pick<T>(rnd: SeededRandom, xs: readonly T[]): T {
  const i = rnd.int(xs.length);
  const x = xs[i] as T;
  picks?.push(typeof x === 'function' ? String(x(1)) : JSON.stringify(x));
  return x;
}

export function payload(rnd: SeededRandom, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(97 + rnd.int(26));
  return s;
}

/** A well-formed chunked body with the given chunk sizes. */
export function chunkedBody(rnd: SeededRandom, sizes: readonly number[], trailers: readonly string[] = []): string {
  let s = '';
  for (const n of sizes) s += `${n.toString(16)}\r\n${payload(rnd, n)}\r\n`;
  return `${s}0\r\n${trailers.map((t) => `${t}\r\n`).join('')}\r\n`;
}

export function setHeader(d: Draft, name: string, value: string): void {
  const i = d.lines.findIndex((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  if (i >= 0) d.lines[i] = `${name}: ${value}`;
  else addLine(d, `${name}: ${value}`);
}

export function addLine(d: Draft, line: string, at = d.lines.length): void {
  d.lines.splice(at, 0, line);
  d.eols.splice(at + 1, 0, '\r\n');
}

export function removeHeader(d: Draft, name: string): void {
  for (let i = d.lines.length - 1; i >= 0; i--) {
    if ((d.lines[i] as string).toLowerCase().startsWith(`${name.toLowerCase()}:`)) {
      d.lines.splice(i, 1);
      d.eols.splice(i + 1, 1);
    }
  }
}

export function useChunked(rnd: SeededRandom, d: Draft): void {
  removeHeader(d, 'content-length');
  setHeader(d, 'Transfer-Encoding', 'chunked');
  d.body = chunkedBody(rnd, [1 + rnd.int(12)]);
}

export function useLength(rnd: SeededRandom, d: Draft, n: number): void {
  removeHeader(d, 'transfer-encoding');
  setHeader(d, 'Content-Length', String(n));
  d.body = payload(rnd, n);
}

export type Mutation = (rnd: SeededRandom, d: Draft) => void;
