/**
 * The logging endpoint sources (and the fair-share shedder) do when the caller passes no logger:
 * JSON lines on stderr through pino, at `EVENLB_LOG_LEVEL` (default `warn`). pino is loaded on
 * the first line written, not when the package is imported: a client that never logs (the
 * common case: discovery is healthy) never loads it, which keeps `import 'evenlb'` as cheap as
 * the engine itself. Callers can pass any pino-compatible logger instead.
 */
import { createRequire } from 'node:module';

/** The logging a source does: pino-compatible `warn`/`info`. */
export interface DiscoveryLogger {
  warn(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
}

let pinoLogger: DiscoveryLogger | undefined;

function load(): DiscoveryLogger {
  if (pinoLogger === undefined) {
    const pino = createRequire(import.meta.url)('pino') as typeof import('pino');
    pinoLogger = pino.pino({ name: 'evenlb', level: process.env.EVENLB_LOG_LEVEL ?? 'warn' }, pino.destination(2));
  }
  return pinoLogger;
}

const lazyLogger: DiscoveryLogger = {
  warn: (fields, message) => load().warn(fields, message),
  info: (fields, message) => load().info(fields, message),
};

/**
 * The default logger: pino on stderr, loaded on its first line.
 *
 * @example
 * const logger = options.logger ?? discoveryLogger();
 * logger.warn({ target }, 'discovery failed; keeping the last known endpoints');
 */
export function discoveryLogger(): DiscoveryLogger {
  return lazyLogger;
}

/** True when `value` looks like a `DiscoveryLogger` (an object with a `warn` method). */
export function isDiscoveryLogger(value: unknown): value is DiscoveryLogger {
  return typeof value === 'object' && value !== null && typeof (value as DiscoveryLogger).warn === 'function';
}
