/**
 * A small, strict parser for the Prometheus text exposition format (0.0.4), as a pod's
 * `/metrics` endpoint serves it: `# HELP` / `# TYPE` lines, samples `name{label="v",...} value
 * [timestamp]`, label values with `\\`, `\"` and `\n` escapes, `NaN` / `+Inf` / `-Inf`. prom-client
 * only writes this format, so doctor reads it here. Strict means a malformed line is an error
 * naming the line number and what was expected — a scrape that returns an HTML login page or a
 * truncated body must not silently read as "zero requests".
 */

/** One sample line. */
export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

/** Thrown for text that is not the exposition format; `line` is 1-based. */
export class PromTextError extends Error {
  readonly line: number;
  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.name = 'PromTextError';
    this.line = line;
  }
}

function parseValue(text: string, line: number): number {
  if (text === 'NaN') return Number.NaN;
  if (text === '+Inf' || text === 'Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
    throw new PromTextError(
      line,
      `expected a sample value (a number, NaN, +Inf or -Inf); received ${JSON.stringify(text)}`,
    );
  }
  return Number(text);
}

/** Parses `{a="1",b="2"}` starting at `text[0] === '{'`; returns the labels and the rest. */
function parseLabels(text: string, line: number): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  const fail = (what: string): never => {
    throw new PromTextError(line, `expected ${what} in the label set at column ${i + 1}`);
  };
  for (;;) {
    while (text[i] === ' ') i++;
    if (text[i] === '}') return { labels, rest: text.slice(i + 1) };
    const m = LABEL_NAME.exec(text.slice(i));
    if (m === null) return fail('a label name or "}"');
    const name = m[0];
    i += name.length;
    if (text[i] !== '=') return fail('"="');
    i++;
    if (text[i] !== '"') return fail('an opening quote');
    i++;
    let value = '';
    for (;;) {
      const ch = text[i];
      if (ch === undefined) return fail('a closing quote');
      if (ch === '"') break;
      if (ch === '\\') {
        const next = text[i + 1];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else return fail('an escape \\\\, \\" or \\n');
        i += 2;
        continue;
      }
      value += ch;
      i++;
    }
    i++;
    if (Object.hasOwn(labels, name)) fail(`no duplicate label ${JSON.stringify(name)}`);
    labels[name] = value;
    while (text[i] === ' ') i++;
    if (text[i] === ',') {
      i++;
      continue;
    }
    if (text[i] !== '}') return fail('"," or "}"');
  }
}

/**
 * Parses an exposition body into samples, in order.
 *
 * @example
 * parsePromText('# TYPE http_requests_total counter\nhttp_requests_total{code="200"} 1027\n')
 * // [{ name: 'http_requests_total', labels: { code: '200' }, value: 1027 }]
 */
export function parsePromText(body: string): PromSample[] {
  const out: PromSample[] = [];
  const lines = body.split('\n');
  for (let n = 0; n < lines.length; n++) {
    const line = (lines[n] as string).replace(/\r$/, '');
    const lineNo = n + 1;
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const m = /^#\s*(HELP|TYPE)\s+(\S+)(?:\s+(.*))?$/.exec(line);
      if (m !== null && m[1] === 'TYPE') {
        const type = (m[3] ?? '').trim();
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(type)) {
          throw new PromTextError(lineNo, `unknown metric type ${JSON.stringify(type)}`);
        }
      }
      continue;
    }
    const m = NAME.exec(line);
    if (m === null)
      throw new PromTextError(lineNo, `expected a metric name; received ${JSON.stringify(line.slice(0, 40))}`);
    const name = m[0];
    let rest = line.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, lineNo));
    const fields = rest.trim().split(/\s+/);
    if (rest.trim() === '' || fields.length > 2 || !/^\s/.test(rest)) {
      throw new PromTextError(lineNo, `expected "${name}" to be followed by a value and an optional timestamp`);
    }
    const value = parseValue(fields[0] as string, lineNo);
    if (fields[1] !== undefined && !/^-?\d+$/.test(fields[1])) {
      throw new PromTextError(lineNo, `expected an integer timestamp; received ${JSON.stringify(fields[1])}`);
    }
    out.push({ name, labels, value });
  }
  return out;
}

/** The sum of every sample named `name` (all label sets), or undefined when there is none. */
export function sumSamples(samples: readonly PromSample[], name: string): number | undefined {
  let found = false;
  let total = 0;
  for (const s of samples) {
    if (s.name !== name || !Number.isFinite(s.value)) continue;
    found = true;
    total += s.value;
  }
  return found ? total : undefined;
}
