/**
 * `evenlb sim --json` text: indented down to each dataplane's fields, then one line per pod,
 * per series row and per nested settings object — readable, diffable and about half the size
 * of fully indented JSON (a thousand pods are a thousand lines, not twelve thousand).
 * Deterministic: the same report gives the same bytes.
 */

/** Depth from which values are written on one line (report = 0, results = 1, a result = 2, its pods = 3). */
const INLINE_DEPTH = 4;

function write(value: unknown, depth: number, indent: string): string {
  if (value === null || typeof value !== 'object' || depth >= INLINE_DEPTH) return JSON.stringify(value) ?? 'null';
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    if (value.every((v) => v === null || typeof v !== 'object')) return JSON.stringify(value);
    return `[\n${value.map((v) => inner + write(v, depth + 1, inner)).join(',\n')}\n${indent}]`;
  }
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return '{}';
  const body = entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${write(v, depth + 1, inner)}`);
  return `{\n${body.join(',\n')}\n${indent}}`;
}

/**
 * The report (or any JSON value) as text, with a trailing newline. `JSON.parse` of the result
 * equals `JSON.parse(JSON.stringify(value))`.
 *
 * @example
 * process.stdout.write(formatReportJson(report));
 */
export function formatReportJson(value: unknown): string {
  return `${write(value, 0, '')}\n`;
}
