/**
 * Instruments on a registry the caller owns, created once per name: several agents or
 * recyclers in one process may share a prom-client `Registry`, so each constructor here returns
 * the instrument already registered under the name when there is one (of the same kind;
 * another kind under that name is an `INVALID_OPTION` error) and otherwise registers a new one.
 * prom-client is loaded on the first instrument, not at import: only programs that ask for
 * metrics (and so hold a `Registry` already) pay for loading it.
 */
import { createRequire } from 'node:module';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ErrorCodes, EvenlbError } from '../core/errors.js';

type PromClient = typeof import('prom-client');
let promClient: PromClient | undefined;

/** prom-client, required on first use (a CommonJS package: loading it is synchronous). */
function prom(): PromClient {
  promClient ??= createRequire(import.meta.url)('prom-client') as PromClient;
  return promClient;
}

/** Returns the instrument registered under `name`, creating it when absent. */
function reuse<M>(
  registry: Registry,
  name: string,
  kind: abstract new (...args: never[]) => M,
  create: (registers: Registry[]) => M,
): M {
  const existing = registry.getSingleMetric(name);
  if (existing === undefined) return create([registry]);
  if (existing instanceof kind) return existing;
  throw new EvenlbError(
    ErrorCodes.INVALID_OPTION,
    `metrics registry: "${name}" is already registered as another kind of instrument`,
    { details: { metric: name } },
  );
}

/**
 * The counter `name` on `registry`, registered on first use.
 *
 * @example
 * const opened = registeredCounter(registry, 'app_connections_opened_total', 'Connections opened.', ['protocol']);
 */
export function registeredCounter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
): Counter<L> {
  const { Counter } = prom();
  return reuse(registry, name, Counter<L>, (registers) => new Counter({ name, help, labelNames, registers }));
}

/** The histogram `name` on `registry` with `buckets`, registered on first use. */
export function registeredHistogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets: number[],
): Histogram<L> {
  const { Histogram } = prom();
  return reuse(
    registry,
    name,
    Histogram<L>,
    (registers) => new Histogram({ name, help, labelNames, buckets, registers }),
  );
}

/**
 * The gauge `name` on `registry`, registered on first use. With `collect`, the gauge is
 * cleared and refilled by it at every scrape.
 */
export function registeredGauge<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  collect?: (gauge: Gauge<L>) => void,
): Gauge<L> {
  const { Gauge } = prom();
  return reuse(
    registry,
    name,
    Gauge<L>,
    (registers) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        ...(collect === undefined
          ? {}
          : {
              collect(this: Gauge<L>) {
                this.reset();
                collect(this);
              },
            }),
      }),
  );
}
