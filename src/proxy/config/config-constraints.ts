/**
 * The checks a JSON schema cannot express, run on a configuration after its fields are valid
 * one by one: what must hold between fields, or between a field and the machine, for every
 * part to start. Each is something node:net, node:http, node:http2 or node:tls would otherwise
 * refuse (or silently get wrong) only when the listener is built or bound — at start that was a
 * crash with Node's message, at a reload a half-applied change. So: a listener's whole-request
 * deadline is not below its head deadline; no duration overflows Node's timers; listener names
 * are unique; no two sockets (listeners, admin, metrics, fair-share load port) would bind the
 * same port (a fair-share or load-report load port included); every IP to bind is this machine's; a fair-share peer list is a target URI;
 * listener recycling is not set on a `tcp` listener; and every PEM file parses as what its
 * field says (a certificate, a private key of that certificate, a CA bundle). Every failure
 * names the field, what it must be and what it is (`configError`).
 */
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { parseTarget } from '../../core/target.js';
import { configError } from './config-error.js';
import type { ListenerConfig, ProxyConfig } from './config-schema.js';
import { addressesOverlap, type ListenAddress, localBindProblem, parseAddress } from './listen-address.js';

/** Node's largest timer delay (2^31 − 1 ms, 24.8 days); a larger one fires after 1 ms. */
export const TIMER_MAX_MS = 2_147_483_647;

/** Every number under a key ending in `Ms`, with its path, anywhere in `value`. */
function* durations(value: unknown, path: string): Generator<{ field: string; ms: number }> {
  if (value === null || typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value)) {
    const field = Array.isArray(value) ? `${path}[${k}]` : path === '' ? k : `${path}.${k}`;
    if (typeof v === 'number' && k.endsWith('Ms')) yield { field, ms: v };
    else yield* durations(v, field);
  }
}

function checkDurations(input: unknown): void {
  for (const { field, ms } of durations(input, '')) {
    if (ms > TIMER_MAX_MS)
      throw configError(field, `must be at most ${TIMER_MAX_MS} ms (24.8 days, the longest timer Node runs)`, ms);
  }
}

function checkListenerLimits(l: ListenerConfig, at: string): void {
  if (l.protocol === 'tcp') {
    for (const k of ['maxRequestsPerConnection', 'maxConnectionAgeMs'] as const) {
      if (l.recycle?.[k] !== undefined)
        throw configError(
          `${at}.recycle.${k}`,
          'is only valid for protocol "http" or "https" (a tcp listener ages connections with maxConnectionAgeMs)',
          l.recycle[k],
        );
    }
    return;
  }
  // node:http refuses a server whose head may take longer than the whole request.
  const { requestTimeoutMs, headersTimeoutMs } = l.limits;
  if (requestTimeoutMs !== 0 && requestTimeoutMs < headersTimeoutMs)
    throw configError(
      `${at}.limits.requestTimeoutMs`,
      `must be 0 (no limit) or at least ${at}.limits.headersTimeoutMs (${headersTimeoutMs} ms): the whole request cannot have less time than its head`,
      requestTimeoutMs,
    );
}

interface Bound {
  readonly field: string;
  readonly shown: string;
  readonly at: ListenAddress;
}

/** Every socket the configuration binds, with the field that asks for it. */
function boundSockets(config: ProxyConfig): Bound[] {
  const out: Bound[] = [];
  const add = (field: string, address: string): void => {
    const { host, port } = parseAddress(address);
    out.push({ field, shown: address, at: { host: host.toLowerCase(), port } });
  };
  if (config.admin !== undefined) {
    add('admin.address', config.admin.address);
    if (config.admin.metricsAddress !== undefined) add('admin.metricsAddress', config.admin.metricsAddress);
  }
  config.listeners.forEach((l, i) => {
    add(`listeners[${i}].address`, l.address);
    // The load document's own port: fair share's, else the load report's (which may only repeat it).
    const fair = l.recycle?.fairShare;
    const load = fair?.loadPort === undefined ? l.loadReport : fair;
    if (load?.loadPort !== undefined) {
      // Without loadHost the document binds every interface (Node listens on `::`, dual-stack).
      const host = load.loadHost ?? '::';
      const shown = `${host.includes(':') ? `[${host}]` : host}:${load.loadPort}`;
      out.push({
        field: `listeners[${i}].${load === fair ? 'recycle.fairShare' : 'loadReport'}.loadPort`,
        shown,
        at: { host: host.toLowerCase(), port: load.loadPort },
      });
    }
  });
  return out;
}

function checkSockets(config: ProxyConfig): void {
  const sockets = boundSockets(config);
  sockets.forEach((s, i) => {
    const problem = localBindProblem(s.at.host);
    if (problem !== undefined) throw configError(s.field, problem, s.shown);
    for (const earlier of sockets.slice(0, i)) {
      if (addressesOverlap(earlier.at, s.at))
        throw configError(
          s.field,
          `must not bind the port of ${earlier.field} (${earlier.shown}): both would listen on it`,
          s.shown,
        );
    }
  });
}

function certificatesIn(field: string, path: string, what: string): X509Certificate[] {
  const text = readFileSync(path, 'latin1');
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  const certs: X509Certificate[] = [];
  for (const block of blocks) {
    try {
      certs.push(new X509Certificate(block));
    } catch (err) {
      throw configError(field, `must hold ${what} (${(err as Error).message})`, path);
    }
  }
  if (certs.length === 0) throw configError(field, `must hold ${what} (no CERTIFICATE block found)`, path);
  return certs;
}

function privateKeyIn(field: string, path: string): KeyObject {
  try {
    return createPrivateKey(readFileSync(path));
  } catch (err) {
    throw configError(field, `must hold an unencrypted PEM private key (${(err as Error).message})`, path);
  }
}

/** A certificate and key pair as an `https` listener serves it: both parse, they match, OpenSSL takes them. */
function checkKeyPair(at: string, certPath: string, keyPath: string, ca: Buffer | undefined): void {
  const [cert] = certificatesIn(`${at}.cert`, certPath, 'a PEM certificate');
  const key = privateKeyIn(`${at}.key`, keyPath);
  if (!(cert as X509Certificate).checkPrivateKey(key))
    throw configError(`${at}.key`, `must be the private key of ${at}.cert (${certPath}); it is another key`, keyPath);
  try {
    tls.createSecureContext({ cert: readFileSync(certPath), key: readFileSync(keyPath), ...(ca ? { ca } : {}) });
  } catch (err) {
    throw configError(`${at}.cert`, `is refused by TLS (${(err as Error).message})`, certPath);
  }
}

function checkTlsFiles(config: ProxyConfig): void {
  config.listeners.forEach((l, i) => {
    if (l.tls === undefined) return;
    const at = `listeners[${i}].tls`;
    let ca: Buffer | undefined;
    if (l.tls.clientCa !== undefined) {
      certificatesIn(`${at}.clientCa`, l.tls.clientCa, 'PEM CA certificates');
      ca = readFileSync(l.tls.clientCa);
    }
    checkKeyPair(at, l.tls.cert, l.tls.key, ca);
    l.tls.sni?.forEach((e, j) => {
      checkKeyPair(`${at}.sni[${j}]`, e.cert, e.key, ca);
    });
  });
  config.clusters.forEach((c, i) => {
    if (c.tls?.ca !== undefined) certificatesIn(`clusters[${i}].tls.ca`, c.tls.ca, 'PEM CA certificates');
  });
}

/**
 * Checks what must hold between the fields of a normalized configuration (and of its raw
 * `input`, for durations) before anything is built from it; throws the first failure.
 *
 * @example
 * checkConstraints(raw, config); // throws: "listeners[0].limits.requestTimeoutMs" must be 0 (no limit) or at least ...
 */
export function checkConstraints(input: unknown, config: ProxyConfig): void {
  checkDurations(input);
  const names = new Map<string, number>();
  config.listeners.forEach((l, i) => {
    const at = `listeners[${i}]`;
    const first = names.get(l.name);
    if (first !== undefined)
      throw configError(`${at}.name`, `must be unique (listeners[${first}] is also named "${l.name}")`, l.name);
    names.set(l.name, i);
    checkListenerLimits(l, at);
    const peers = l.recycle?.fairShare?.peers;
    if (peers !== undefined) {
      try {
        parseTarget(peers);
      } catch (err) {
        throw configError(`${at}.recycle.fairShare.peers`, `is not a valid target URI: ${(err as Error).message}`);
      }
    }
  });
  checkSockets(config);
  checkTlsFiles(config);
}
