/**
 * What sees every request a server's connection registry hands to the application, before the
 * application does (`reportLoad` counts them and sets their load report). The registry calls
 * it only for requests it admits — not for the load document it answers itself, nor for
 * requests pipelined behind a closing response or streams refused after GOAWAY.
 *
 * An HTTP/1.x request's end is reported by the registry (`TappedRequest.end`, from the one
 * `close` listener it keeps per response — shared with the connection tracking when there is
 * any), so a tap adds no listener of its own to the response.
 */
import type http from 'node:http';
import type http2 from 'node:http2';

/** A request a tap is following: told once when its response has closed. */
export interface TappedRequest {
  /** The response closed; `failed` when its status was ≥ 500. */
  end(failed: boolean): void;
}

export interface RequestTap {
  /** An HTTP/1.x request (also one an HTTP/2 server with `allowHTTP1` serves); undefined: nothing to follow. */
  request(req: http.IncomingMessage, res: http.ServerResponse): TappedRequest | undefined;
  /** An HTTP/2 stream (the compatibility API's requests too). */
  stream(stream: http2.ServerHttp2Stream): void;
}
