/**
 * The certificates of one `https` listener: a default certificate, more chosen by the TLS
 * server name (SNI: exact names first, then `*.suffix` wildcards covering one label), and
 * optionally a CA that client certificates must chain to (mutual TLS). The PEM files are read
 * at start and again on every configuration reload; when their bytes changed the listener's
 * server gets the new contexts (`setSecureContext`), so a rotated certificate is served to new
 * connections without restarting the listener or dropping open ones.
 */
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import type { ListenerTlsConfig } from '../config/config-schema.js';

interface Loaded {
  readonly key: Buffer;
  readonly cert: Buffer;
  readonly ca: Buffer | undefined;
  readonly exact: ReadonlyMap<string, tls.SecureContext>;
  readonly wildcard: readonly { readonly suffix: string; readonly context: tls.SecureContext }[];
  /** All file bytes, to tell whether a reload changed anything. */
  readonly fingerprint: string;
}

function load(config: ListenerTlsConfig): Loaded {
  const key = readFileSync(config.key);
  const cert = readFileSync(config.cert);
  const ca = config.clientCa === undefined ? undefined : readFileSync(config.clientCa);
  const parts = [key, cert, ca ?? Buffer.alloc(0)];
  const exact = new Map<string, tls.SecureContext>();
  const wildcard: { suffix: string; context: tls.SecureContext }[] = [];
  for (const entry of config.sni ?? []) {
    const k = readFileSync(entry.key);
    const c = readFileSync(entry.cert);
    parts.push(k, c);
    const context = tls.createSecureContext({ key: k, cert: c, ...(ca === undefined ? {} : { ca }) });
    for (const name of entry.serverNames) {
      const lower = name.toLowerCase();
      if (lower.startsWith('*.')) wildcard.push({ suffix: lower.slice(1), context });
      else if (!exact.has(lower)) exact.set(lower, context);
    }
  }
  wildcard.sort((a, b) => b.suffix.length - a.suffix.length);
  return { key, cert, ca, exact, wildcard, fingerprint: Buffer.concat(parts).toString('base64') };
}

export class ListenerTls {
  readonly #config: ListenerTlsConfig;
  #loaded: Loaded;

  /** Reads every PEM file now; throws when one cannot be read. */
  constructor(config: ListenerTlsConfig) {
    this.#config = config;
    this.#loaded = load(config);
  }

  /** Options for `tls.createServer` (plus the caller's ALPN list). */
  serverOptions(): tls.TlsOptions {
    const l = this.#loaded;
    return {
      key: l.key,
      cert: l.cert,
      ...(l.ca === undefined ? {} : { ca: l.ca, requestCert: true, rejectUnauthorized: true }),
      SNICallback: (servername, callback) => callback(null, this.contextFor(servername)),
    };
  }

  /** The context for a TLS server name; undefined = the default certificate. */
  contextFor(servername: string): tls.SecureContext | undefined {
    const l = this.#loaded;
    const name = servername.toLowerCase();
    const exact = l.exact.get(name);
    if (exact !== undefined) return exact;
    for (const w of l.wildcard) {
      if (name.endsWith(w.suffix) && name.indexOf('.') === name.length - w.suffix.length) return w.context;
    }
    return undefined;
  }

  /**
   * Re-reads the PEM files; when they changed, `server` serves the new default context to new
   * connections. Returns whether anything changed; throws (changing nothing) when a file
   * cannot be read or is not valid PEM.
   */
  refresh(server: tls.Server): boolean {
    const next = load(this.#config);
    if (next.fingerprint === this.#loaded.fingerprint) return false;
    server.setSecureContext({
      key: next.key,
      cert: next.cert,
      ...(next.ca === undefined ? {} : { ca: next.ca }),
    });
    this.#loaded = next;
    return true;
  }
}
