/**
 * The load document evenlb servers serve at their load path (`GET /.well-known/evenlb/load`,
 * JSON): one versioned document read by two kinds of askers. Fair-share peers read
 * `metric`, `load` and `windowMs` (the load exchange); load probes (the `prequal` policy's
 * `LoadProber`) read `inFlight` — requests in flight at the server now — and `latencyMs` — its
 * latency estimate at that in-flight count. A server fills the parts it can: a peer document
 * gains the probe fields when the server also reports its load, and a server reporting its load
 * without fair share serves the probe fields alone (no `metric`/`load`, so a fair-share peer
 * does not mistake it for a peer):
 *
 * ```json
 * {"protocol":"evenlb-load/1","metric":"requests-per-second","load":152.5,"windowMs":2000,"inFlight":3,"latencyMs":12.5}
 * ```
 *
 * Askers ignore fields they do not know, so both parts grow compatibly. A probe answer is
 * advice from a peer: anything but a well-formed document within `MAX_LOAD_DOCUMENT_BYTES`
 * is no answer, never an exception.
 */

/** The `protocol` of every load document. */
export const LOAD_PROTOCOL = 'evenlb-load/1';

/** The path every server serves its load document on (HTTP GET, JSON), unless configured otherwise. */
export const DEFAULT_LOAD_PATH = '/.well-known/evenlb/load';

/** What a load document path option must be: it starts with "/" and has no spaces. */
export const LOAD_PATH_EXPECTED = 'a path starting with "/" (no spaces)';

/** True for a valid load document path (`LOAD_PATH_EXPECTED`). */
export const isLoadPath = (v: unknown): v is string => typeof v === 'string' && /^\/\S*$/.test(v);

/** The longest load document an asker reads; a longer answer is no answer. */
export const MAX_LOAD_DOCUMENT_BYTES = 4096;

/**
 * What a load probe learns: the server's requests in flight now and its latency estimate (ms).
 * A server that has completed no request yet leaves `latencyMs` out: it does not know it (older
 * servers answered 0 then, which askers also read as unknown).
 */
export interface ProbeAnswer {
  readonly inFlight: number;
  readonly latencyMs?: number;
}

const isFigure = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/**
 * The probe answer in a load document's text; `undefined` when it is not an `evenlb-load/1`
 * document with a finite, non-negative `inFlight` and, if present, `latencyMs`. A `latencyMs`
 * of 0 (what older servers answered before their first completion) is left out like a missing
 * one: unknown.
 *
 * @example
 * parseProbeAnswer('{"protocol":"evenlb-load/1","inFlight":3,"latencyMs":12.5}'); // → { inFlight: 3, latencyMs: 12.5 }
 * parseProbeAnswer('{"protocol":"evenlb-load/1","inFlight":0}'); // → { inFlight: 0 }
 * parseProbeAnswer('<html>'); // → undefined
 */
export function parseProbeAnswer(text: string): ProbeAnswer | undefined {
  if (text.length > MAX_LOAD_DOCUMENT_BYTES) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return undefined;
  const d = doc as Record<string, unknown>;
  if (d.protocol !== LOAD_PROTOCOL || !isFigure(d.inFlight)) return undefined;
  if (d.latencyMs === undefined || d.latencyMs === 0) return { inFlight: d.inFlight };
  if (!isFigure(d.latencyMs)) return undefined;
  return { inFlight: d.inFlight, latencyMs: d.latencyMs };
}
