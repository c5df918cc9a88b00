/**
 * Where one server serves its load document (`GET <path>`, JSON; see `load-document.ts`): on
 * the server itself (HTTP/1.x servers only: the connection registry answers the path before the
 * application sees the request) or on a port of its own (plain HTTP/1.1, any server). The
 * document has up to two parts, each from whoever attached it: the fair-share peer report (a
 * recycler's `fairShare`) and the probe figures (`reportLoad`). Both read the same endpoint, so
 * fair-share peers and load probes ask one path on one port.
 *
 * One endpoint per server (`attachLoadDocument`): the first part attached fixes where it is
 * served. A part that says nothing of the place joins it; one that names it moves an endpoint
 * nobody named yet, and is an error naming the field when another part named a different one.
 * The last part detached closes it.
 */
import http from 'node:http';
import type { ProbeAnswer } from '../../balancing/load-document.js';
import { LOAD_PROTOCOL } from '../../balancing/load-document.js';
import { ErrorCodes, EvenlbError } from '../../core/errors.js';
import type { FairShareLogger } from '../fair-share/fair-share-options.js';
import type { PeerLoadReport } from '../fair-share/load-exchange.js';
import { isLoadRequest } from '../fair-share/load-exchange.js';
import type { ServerKind } from '../server-kind.js';

/** Where a load document is served: `port` undefined = on the server itself. */
export interface LoadPlace {
  readonly path: string;
  readonly port: number | undefined;
  /** Address the own-port server binds; default all interfaces. */
  readonly host: string | undefined;
}

/** A part of the document. */
export type LoadPart = { readonly peer: () => PeerLoadReport } | { readonly probe: () => ProbeAnswer };

/** Warnings (a load port that cannot be bound): the fair-share logger's shape. */
export type LoadEndpointLogger = FairShareLogger;

export class LoadEndpoint {
  #place: LoadPlace;
  /** A part named the place (it may no longer move). */
  named: boolean;
  #peer: (() => PeerLoadReport) | undefined;
  #probe: (() => ProbeAnswer) | undefined;
  #server: http.Server | undefined;
  readonly #logger: LoadEndpointLogger | undefined;
  /** Resolves true once the own-port server listens, false when it cannot (or there is none). */
  listening: Promise<boolean> = Promise.resolve(false);

  constructor(place: LoadPlace, named: boolean, logger?: LoadEndpointLogger) {
    this.#place = place;
    this.named = named;
    this.#logger = logger;
    this.#listen();
  }

  get place(): LoadPlace {
    return this.#place;
  }

  /** True while no part is attached. */
  get empty(): boolean {
    return this.#peer === undefined && this.#probe === undefined;
  }

  /** Attaches `part`. */
  attach(part: LoadPart): void {
    if ('peer' in part) this.#peer = part.peer;
    else this.#probe = part.probe;
  }

  /** Detaches the part of `part`'s kind. */
  detach(part: LoadPart): void {
    if ('peer' in part) this.#peer = undefined;
    else this.#probe = undefined;
  }

  /** Serves from `place` from now on (an own-port server closes, another opens). */
  move(place: LoadPlace): void {
    this.#close();
    this.#place = place;
    this.#listen();
  }

  /** The document now. */
  document(): object {
    const probe = this.#probe?.();
    const base: object = this.#peer?.() ?? { protocol: LOAD_PROTOCOL };
    if (probe === undefined) return base;
    // No latencyMs while the server does not know it (see `ProbeAnswer`).
    return probe.latencyMs === undefined
      ? { ...base, inFlight: probe.inFlight }
      : { ...base, inFlight: probe.inFlight, latencyMs: probe.latencyMs };
  }

  /** Answers `req` when it asks for the document on the server itself; true when it did. */
  answer(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    if (this.#place.port !== undefined || !isLoadRequest(req.method, req.url, this.#place.path)) return false;
    this.#write(req, res);
    return true;
  }

  /** Closes the own-port server (if any); idempotent, always settles. */
  close(): Promise<void> {
    return this.#close();
  }

  #write(req: http.IncomingMessage, res: http.ServerResponse): void {
    req.resume();
    const body = JSON.stringify(this.document());
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
    });
    res.end(body);
  }

  #listen(): void {
    const { port, host, path } = this.#place;
    if (port === undefined) {
      this.listening = Promise.resolve(false);
      return;
    }
    const server = http.createServer((req, res) => {
      if (isLoadRequest(req.method, req.url, path)) this.#write(req, res);
      else res.writeHead(404).end();
    });
    this.listening = new Promise((resolve) => {
      server.once('listening', () => resolve(true));
      server.on('error', (err) => {
        resolve(false);
        this.#logger?.warn({ err, port }, `load document: cannot serve ${path} on port ${port}`);
      });
    });
    server.listen(port, host);
    server.unref();
    this.#server = server;
  }

  #close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return Promise.resolve();
    return new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}

/** The server a load endpoint belongs to (its connection registry). */
export interface LoadEndpointHost {
  readonly kind: ServerKind;
  loadEndpoint: LoadEndpoint | undefined;
}

/** Where a part wants the document: fields left undefined are not named. */
export interface LoadPlaceRequest {
  readonly component: string;
  /** Option names of `port` and `path` in the caller's options (for errors). */
  readonly fields: { readonly port: string; readonly path: string };
  readonly port?: number | undefined;
  readonly host?: string | undefined;
  readonly path?: string | undefined;
  readonly defaultPath: string;
  readonly logger?: LoadEndpointLogger | undefined;
}

/**
 * Attaches `part` to `registry`'s load endpoint, making or moving it as the module comment says;
 * returns the detach function (the last detach closes the endpoint). Throws
 * `EVENLB_INVALID_OPTION` naming the field for a place another part named differently, and for
 * an HTTP/2 server without a port (the document is plain HTTP/1.1).
 */
export function attachLoadDocument(
  registry: LoadEndpointHost,
  part: LoadPart,
  request: LoadPlaceRequest,
): () => Promise<void> {
  const named = request.port !== undefined || request.path !== undefined;
  const wanted: LoadPlace = { path: request.path ?? request.defaultPath, port: request.port, host: request.host };
  let endpoint = registry.loadEndpoint;
  let place = wanted;
  if (endpoint !== undefined && (!named || endpoint.named)) {
    place = endpoint.place;
    if (named && place.port !== wanted.port) throw placeConflict(request, request.fields.port, place.port, wanted.port);
    if (named && place.path !== wanted.path) throw placeConflict(request, request.fields.path, place.path, wanted.path);
  }
  if (place.port === undefined && (registry.kind === 'h2c' || registry.kind === 'h2-secure')) {
    throw new EvenlbError(
      ErrorCodes.INVALID_OPTION,
      `${request.component}: option "${request.fields.port}" must be set for an HTTP/2 server (the load document is plain HTTP/1.1 on its own port); received undefined`,
      { details: { component: request.component, field: request.fields.port } },
    );
  }
  if (endpoint === undefined) {
    endpoint = new LoadEndpoint(wanted, named, request.logger);
    registry.loadEndpoint = endpoint;
  } else if (named && !endpoint.named) {
    endpoint.move(wanted);
    endpoint.named = true;
  }
  endpoint.attach(part);
  const e = endpoint;
  let detached = false;
  return async () => {
    if (detached) return;
    detached = true;
    e.detach(part);
    if (!e.empty) return;
    if (registry.loadEndpoint === e) registry.loadEndpoint = undefined;
    await e.close();
  };
}

function placeConflict(request: LoadPlaceRequest, field: string, theirs: unknown, ours: unknown): EvenlbError {
  return new EvenlbError(
    ErrorCodes.INVALID_OPTION,
    `${request.component}: option "${field}" must match where this server already serves its load document (${String(theirs)}); received ${String(ours)}`,
    { details: { component: request.component, field, expected: String(theirs) } },
  );
}
