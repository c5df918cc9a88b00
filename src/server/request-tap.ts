/**
 * What sees every request a server's connection registry hands to the application, before the
 * application does (`reportLoad` counts them and sets their load report). The registry calls
 * it only for requests it admits — not for the load document it answers itself, nor for
 * requests pipelined behind a closing response or streams refused after GOAWAY.
 */
import type http from 'node:http';
import type http2 from 'node:http2';

export interface RequestTap {
  /** An HTTP/1.x request (also one an HTTP/2 server with `allowHTTP1` serves). */
  request(req: http.IncomingMessage, res: http.ServerResponse): void;
  /** An HTTP/2 stream (the compatibility API's requests too). */
  stream(stream: http2.ServerHttp2Stream): void;
}
