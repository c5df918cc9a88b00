/**
 * Hostile and unusual backend responses for the smuggling corpus, by name (`/r/<mode>`).
 * Each writes its response (carrying the echo body where it has a body) and sometimes closes
 * the socket. Bytes meant to poison a pooled connection say `/poisoned`: no client may ever
 * receive them as a response.
 */
import type { Socket } from 'node:net';

const POISON = 'HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n/poisoned';

function chunked(body: string): string {
  return `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
}

type Writer = (body: string, head: boolean, socket: Socket) => void;

const len = (b: string): number => Buffer.byteLength(b);
const send =
  (head: (b: string) => string, after?: (s: Socket) => void): Writer =>
  (body, isHead, socket) => {
    socket.write(head(isHead ? '' : body));
    after?.(socket);
  };
const withCl = (extra: string): Writer =>
  send((b) => `HTTP/1.1 200 OK\r\ncontent-length: ${len(b)}\r\n${extra}\r\n${b}`);
const withChunked = (extra: string, te = 'chunked'): Writer =>
  send((b) => `HTTP/1.1 200 OK\r\ntransfer-encoding: ${te}\r\n${extra}\r\n${chunked(b)}`);
const thenClose = (s: Socket): void => {
  s.end();
};

/** The hostile response modes, by name. */
export const RESPONSE_MODES: Readonly<Record<string, Writer>> = {
  plain: withCl(''),
  'conn-cl': withCl('Connection: content-length\r\n'),
  'conn-close-cl': withCl('Connection: close, content-length\r\n'),
  'conn-cl-mixed': withCl('Connection: Content-Length , x-extra\r\nx-extra: 1\r\n'),
  'conn-cl-twice': withCl('Connection: keep-alive\r\nConnection: content-length\r\n'),
  'conn-te': withChunked('Connection: transfer-encoding\r\n'),
  'dup-cl': send((b) => `HTTP/1.1 200 OK\r\ncontent-length: ${len(b)}\r\nContent-Length: ${len(b)}\r\n\r\n${b}`),
  'dup-cl-diff': send(
    (b) => `HTTP/1.1 200 OK\r\ncontent-length: ${len(b)}\r\ncontent-length: ${len(b) + 1}\r\n\r\n${b}`,
  ),
  'close-delimited': send((b) => `HTTP/1.1 200 OK\r\n\r\n${b}`, thenClose),
  'close-delimited-keepalive': send((b) => `HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n${b}`, thenClose),
  'http10-close-delimited': send((b) => `HTTP/1.0 200 OK\r\n\r\n${b}`, thenClose),
  'http10-cl': send((b) => `HTTP/1.0 200 OK\r\ncontent-length: ${len(b)}\r\n\r\n${b}`),
  'te-gzip': send((b) => `HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n${b}`, thenClose),
  'te-identity': send((b) => `HTTP/1.1 200 OK\r\ntransfer-encoding: identity\r\n\r\n${b}`, thenClose),
  'te-chunked-upper': withChunked('', 'Chunked'),
  'te-gzip-chunked': withChunked('', 'gzip, chunked'),
  'te-chunked-twice': withChunked('', 'chunked, chunked'),
  'te-and-cl': withChunked('content-length: 3\r\n'),
  'bad-chunk-size': send(() => 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n'),
  'chunk-no-crlf': send(
    (b) => `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${len(b).toString(16)}\r\n${b}XX0\r\n\r\n`,
  ),
  'chunk-overflow': send(() => 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nfffffffffffffffffff\r\nhi\r\n'),
  'bad-chunk-late': (body, _head, socket) => {
    socket.write(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${len(body).toString(16)}\r\n${body}\r\n`);
    setTimeout(() => socket.write('zz\r\n'), 15).unref();
  },
  'chunk-trailers': send(
    (b) => `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${len(b).toString(16)}\r\n${b}\r\n0\r\nx-t: 1\r\n\r\n`,
  ),
  'chunk-poison-trailer': send(
    (b) =>
      `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${len(b).toString(16)}\r\n${b}\r\n0\r\n${POISON}\r\n\r\n`,
  ),
  'extra-response': send((b) => `HTTP/1.1 200 OK\r\ncontent-length: ${len(b)}\r\n\r\n${b}${POISON}`),
  'no-body-204': send(() => `HTTP/1.1 204 No Content\r\ncontent-length: 9\r\n\r\n/poisoned`),
  'not-modified-304': send(() => `HTTP/1.1 304 Not Modified\r\ncontent-length: 9\r\n\r\n/poisoned`),
  'continue-then-200': send(
    (b) => `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: ${len(b)}\r\n\r\n${b}`,
  ),
  'unasked-101': send(
    () => `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n${POISON}`,
  ),
  'short-body': send((b) => `HTTP/1.1 200 OK\r\ncontent-length: ${len(b) + 100}\r\n\r\n${b}`, thenClose),
  'huge-cl': send((b) => `HTTP/1.1 200 OK\r\ncontent-length: 99999999999\r\n\r\n${b}`, thenClose),
  'space-before-colon': send((b) => `HTTP/1.1 200 OK\r\ncontent-length : ${len(b)}\r\n\r\n${b}`),
  'obs-fold': send((b) => `HTTP/1.1 200 OK\r\ncontent-length: ${len(b)}\r\nx-a: 1\r\n 2\r\n\r\n${b}`),
  'nul-in-value': send((b) => `HTTP/1.1 200 OK\r\ncontent-length: ${len(b)}\r\nx-a: 1\u00002\r\n\r\n${b}`),
  'lf-only': send((b) => `HTTP/1.1 200 OK\ncontent-length: ${len(b)}\n\n${b}`),
  'plus-cl': send((b) => `HTTP/1.1 200 OK\r\ncontent-length: +${len(b)}\r\n\r\n${b}`),
  'neg-cl': send((b) => `HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n${b}`),
  'cl-list': send((b) => `HTTP/1.1 200 OK\r\ncontent-length: ${len(b)}, ${len(b)}\r\n\r\n${b}`),
  'bad-status-line': send((b) => `HTTP/1.1 2000 OK\r\ncontent-length: ${len(b)}\r\n\r\n${b}`),
  'keep-alive-short': withCl('Keep-Alive: timeout=1\r\n'),
  // For a HEAD request: body bytes after a bodiless response.
  'head-body': (_body, _head, socket) => {
    socket.write('HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n/poisoned');
  },
};

/** Writes response `mode` for a request (its echo `body`; `head` for a HEAD request). */
export function hostileResponse(mode: string, body: string, head: boolean, socket: Socket): void {
  const w = RESPONSE_MODES[mode];
  if (w === undefined) {
    socket.destroy();
    return;
  }
  w(body, head, socket);
}
