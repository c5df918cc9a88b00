/**
 * Label and field selectors as the fake Kubernetes API server applies them to LIST and WATCH
 * requests: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k` over labels, and
 * `=`, `==`, `!=` over `metadata.name` / `metadata.namespace`.
 */

export type Labels = Readonly<Record<string, string>>;
export type Predicate = (labels: Labels) => boolean;

export class SelectorError extends Error {}

export function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      terms.push(current);
      current = '';
    } else current += ch;
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter((t) => t !== '');
}

/** Parses a label selector: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`. */
export function parseLabelSelector(text: string): Predicate {
  const preds = splitTerms(text).map((term): Predicate => {
    let m = /^([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)$/.exec(term);
    if (m !== null) {
      const [, key = '', op, value = ''] = m;
      return op === '!=' ? (l) => l[key] !== value : (l) => l[key] === value;
    }
    m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (m !== null) {
      const [, key = '', op, list = ''] = m;
      const values = new Set(list.split(',').map((v) => v.trim()));
      return op === 'in'
        ? (l) => l[key] !== undefined && values.has(l[key])
        : (l) => l[key] === undefined || !values.has(l[key]);
    }
    m = /^(!?)([\w./-]+)$/.exec(term);
    if (m !== null) {
      const [, not, key = ''] = m;
      return not === '!' ? (l) => l[key] === undefined : (l) => l[key] !== undefined;
    }
    throw new SelectorError(`unable to parse requirement: ${JSON.stringify(term)}`);
  });
  return (labels) => preds.every((p) => p(labels));
}

/** Parses a field selector over `metadata.name` and `metadata.namespace` (`=`, `==`, `!=`). */
export function parseFieldSelector(text: string): Predicate {
  const preds = splitTerms(text).map((term): Predicate => {
    const m = /^(metadata\.name|metadata\.namespace)\s*(==|=|!=)\s*([\w.-]*)$/.exec(term);
    if (m === null) throw new SelectorError(`field label not supported: ${JSON.stringify(term)}`);
    const [, field = '', op, value = ''] = m;
    return op === '!=' ? (f) => f[field] !== value : (f) => f[field] === value;
  });
  return (fields) => preds.every((p) => p(fields));
}
