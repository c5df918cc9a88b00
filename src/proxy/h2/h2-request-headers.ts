/**
 * The request an `h2` upstream is sent: an HTTP/2 header object built from the pseudo-headers
 * and the forwarded header list (`upstreamRequestHeaders`), and the client's `grpc-timeout`
 * deadline, which the proxy forwards and enforces as well.
 */

/** An HTTP/2 header object as node:http2 sends it. */
export type H2Headers = Record<string, string | string[] | number | undefined>;

/**
 * `grpc-timeout` (`<digits><unit>`, units H M S m u n) in ms; undefined when absent or malformed.
 *
 * @example
 * parseGrpcTimeoutMs('250m'); // 250
 */
export function parseGrpcTimeoutMs(value: string | undefined): number | undefined {
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
 *
 * @example
 * h2RequestHeaders({ ':method': 'GET', ':path': '/' }, ['host', 'api.test', 'cookie', 'a=1', 'cookie', 'b=2']);
 * // { ':method': 'GET', ':path': '/', ':authority': 'api.test', cookie: ['a=1', 'b=2'] }
 */
export function h2RequestHeaders(pseudo: H2Headers, forwarded: readonly string[]): H2Headers {
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
