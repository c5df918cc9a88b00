/**
 * The two requests discovery makes, over undici: LIST a collection (one JSON document) and
 * WATCH it (a chunked stream of JSON lines). Non-2xx answers come back as a typed result with
 * the API's Status (never thrown), so callers tell "410 Expired", "403 Forbidden" and "500"
 * apart; network errors and aborts are thrown. The watch body is yielded as batches of complete
 * lines, one batch per received chunk, so a burst of events is applied and published once.
 */
import { request } from 'undici';
import type { KubeConnection } from './kube-connection.js';
import { isStatus, type Status } from './kube-objects.js';

export type ApiResult<T> =
  | { readonly type: 'ok'; readonly value: T }
  | {
      readonly type: 'status';
      readonly statusCode: number;
      /** The API's Status body, when it sent one. */
      readonly status: Status | undefined;
      /** From a `Retry-After` header (429, 503), in ms. */
      readonly retryAfterMs: number | undefined;
    };

/** Query parameters; undefined values are left out. */
export type Query = Readonly<Record<string, string | undefined>>;

function url(server: string, path: string, query: Query): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
  const qs = params.toString();
  return `${server}${path}${qs === '' ? '' : `?${qs}`}`;
}

function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^[0-9]+$/.test(value.trim())) return undefined;
  return Number(value.trim()) * 1000;
}

async function statusResult(
  statusCode: number,
  headers: Record<string, string | string[] | undefined>,
  body: { text(): Promise<string> },
): Promise<ApiResult<never>> {
  let status: Status | undefined;
  try {
    const parsed: unknown = JSON.parse(await body.text());
    if (isStatus(parsed)) status = parsed;
  } catch {
    // A non-JSON error body (a proxy's HTML page): the status code says enough.
  }
  return { type: 'status', statusCode, status, retryAfterMs: retryAfterMs(headers['retry-after']) };
}

/** Splits a byte stream into lines; yields the complete lines of each chunk together. */
async function* lineBatches(body: AsyncIterable<Buffer>): AsyncGenerator<string[]> {
  const decoder = new TextDecoder();
  let rest = '';
  for await (const chunk of body) {
    const text = rest + decoder.decode(chunk, { stream: true });
    const lines = text.split('\n');
    rest = lines.pop() ?? '';
    const complete = lines.filter((l) => l.trim() !== '');
    if (complete.length > 0) yield complete;
  }
  const tail = (rest + decoder.decode()).trim();
  if (tail !== '') yield [tail];
}

export class KubeApiClient {
  readonly connection: KubeConnection;

  constructor(connection: KubeConnection) {
    this.connection = connection;
  }

  /** GET `path` and parse the JSON body (a LIST, or one object). */
  async get(path: string, query: Query, signal: AbortSignal): Promise<ApiResult<unknown>> {
    const { server, headers, dispatcher } = await this.connection.prepare();
    signal.throwIfAborted();
    const res = await request(url(server, path, query), { method: 'GET', headers, dispatcher, signal });
    if (res.statusCode < 200 || res.statusCode >= 300) return statusResult(res.statusCode, res.headers, res.body);
    return { type: 'ok', value: await res.body.json() };
  }

  /**
   * Opens a watch. On 2xx the result's value yields batches of lines until the server ends the
   * stream; aborting `signal` ends it early (the iterator then throws).
   */
  async watch(path: string, query: Query, signal: AbortSignal): Promise<ApiResult<AsyncGenerator<string[]>>> {
    const { server, headers, dispatcher } = await this.connection.prepare();
    signal.throwIfAborted();
    const res = await request(url(server, path, { ...query, watch: '1' }), {
      method: 'GET',
      headers,
      dispatcher,
      signal,
    });
    if (res.statusCode < 200 || res.statusCode >= 300) return statusResult(res.statusCode, res.headers, res.body);
    return { type: 'ok', value: lineBatches(res.body as AsyncIterable<Buffer>) };
  }
}
