/**
 * Differential, seeded fuzz test of the proxy's strict HTTP/1.1 request parsing against
 * Node's own parser (llhttp in strict mode), as a request-smuggling guard. The proxy forwards a
 * request head and the body bytes in their original framing to backends that are often Node
 * servers; a smuggling vector exists when evenlb accepts a request that such a backend would
 * frame differently (another body length, so another start for the next request) or refuse.
 * A seeded generator builds requests from valid parts plus targeted mutations (Content-Length
 * and Transfer-Encoding variants, odd bytes in names and values, bare CR/LF, NUL, obs-fold,
 * chunk-size and trailer variants, missing CRLFs, HTTP/1.0, absolute-form targets, Host
 * duplicates), each followed by a pipelined probe request (parser-differential-corpus.ts).
 * evenlb's verdict comes from `parseRequestHead` and `ChunkedScanner`; Node's from a real
 * `node:http` server fed the exact bytes over a loopback socket. Whenever evenlb accepts the
 * first request Node must accept it too, with the same method, target and body length, and see
 * the same next request; evenlb refusing what Node accepts is allowed (stricter) and summarised
 * once per run.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/random.js';
import { generate } from './parser-differential-corpus.js';
import type { Case } from './parser-differential-draft.js';
import {
  type Category,
  categorise,
  compare,
  evenlbVerdict,
  type Finding,
  type NodeRecord,
  type NodeResult,
  nodeVerdict,
  type Verdict,
} from './parser-differential-verdicts.js';

const SEED = 0x5eed_b0d1;
const MAX_CASES = 12_000;
const MIN_CASES = 3000;
const BUDGET_MS = 18_000;
const PARALLEL = 16;
/** Bound on one case's wait for Node to answer and close. */
const CASE_TIMEOUT_MS = 3000;

// ---------------------------------------------------------------------------------------------
// The Node server

let server: http.Server;
let port = 0;
const records = new Map<number, NodeRecord>();

beforeAll(async () => {
  server = http.createServer({ insecureHTTPParser: false, requireHostHeader: true }, (req, res) => {
    const rec = records.get(req.socket.remotePort ?? -1);
    const entry = { method: req.method ?? '', url: req.url ?? '', bodyBytes: 0, complete: false };
    rec?.requests.push(entry);
    req.on('data', (c: Buffer) => {
      entry.bodyBytes += c.length;
    });
    req.on('end', () => {
      entry.complete = req.complete;
      res.end('ok');
    });
  });
  // Half-closed by the client, the connection still answers what it parsed (and the parser's
  // end-of-input check runs), instead of aborting the requests in progress.
  Object.assign(server, { httpAllowHalfOpen: true });
  server.on('connection', (socket: net.Socket) => {
    records.set(socket.remotePort ?? -1, { requests: [], error: undefined, errorAfter: 0 });
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: net.Socket) => {
    const rec = records.get(socket.remotePort ?? -1);
    if (rec !== undefined && rec.error === undefined) {
      rec.error = err.code ?? err.message;
      rec.errorAfter = rec.requests.filter((r) => r.complete).length;
    }
    // Let the request already parsed finish its body events first.
    setImmediate(() => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Sends `bytes` on a fresh connection, half-closes it, and returns what Node made of them. */
function runOnNode(bytes: Buffer): Promise<NodeResult> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    let response = '';
    let timedOut = false;
    let localPort = -1;
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy();
    }, CASE_TIMEOUT_MS);
    timer.unref();
    socket.on('connect', () => {
      localPort = socket.localPort ?? -1;
      socket.end(bytes);
    });
    socket.on('data', (c: Buffer) => {
      if (response.length < 64) response += c.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      // The server side may see the close a moment later; its record is complete by then
      // because every record update happens before the server ends or destroys the socket.
      setImmediate(() => {
        const rec = records.get(localPort);
        records.delete(localPort);
        resolve(nodeVerdict(rec, response, timedOut));
      });
    });
  });
}

describe('HTTP/1.1 request parsing against Node (llhttp, strict)', () => {
  it(`agrees with Node on every request evenlb accepts (seed ${SEED}, up to ${MAX_CASES} cases)`, async () => {
    const rnd = new SeededRandom(SEED);
    const cases: Case[] = [];
    for (let i = 0; i < MAX_CASES; i++) cases.push(generate(rnd, i));
    const deadline = Date.now() + BUDGET_MS;
    const findings: Finding[] = [];
    const known = new Map<Category, number>();
    const stricter = new Map<string, number>();
    const outcomes = { bothAccept: 0, nextChecked: 0, bothRefuse: 0, evenlbStricter: 0 };
    let next = 0;
    let done = 0;
    const worker = async (): Promise<void> => {
      while (next < cases.length && Date.now() < deadline) {
        const c = cases[next++] as Case;
        const ev = evenlbVerdict(c.bytes);
        const nd = await runOnNode(c.bytes);
        done++;
        const problem = compare(c, ev, nd);
        if (problem !== undefined) {
          const category = categorise(ev, nd.first);
          if (category !== undefined) {
            known.set(category, (known.get(category) ?? 0) + 1);
          } else {
            const bytes = c.bytes.toString('latin1');
            findings.push({ id: c.id, details: c.details, bytes, evenlb: ev.first, node: nd.first, problem });
          }
        } else if (ev.first.kind === 'accept') {
          outcomes.bothAccept++;
          if (nd.secondUrl !== undefined && nd.secondUrl === ev.secondTarget) outcomes.nextChecked++;
        } else if (nd.first.kind === 'accept') {
          outcomes.evenlbStricter++;
          const key = [...new Set(c.tags)].sort().join('+');
          stricter.set(key, (stricter.get(key) ?? 0) + 1);
        } else {
          outcomes.bothRefuse++;
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    const top = [...stricter].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1));
    const rest = top.slice(12).reduce((n, [, k]) => n + k, 0);
    console.log(
      `parser differential: ${done} cases; both accept ${outcomes.bothAccept} (next request agreed ${outcomes.nextChecked}), ` +
        `both refuse ${outcomes.bothRefuse}; evenlb stricter ${outcomes.evenlbStricter}: ` +
        `${top
          .slice(0, 12)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')}${rest > 0 ? `, other ${rest}` : ''}; ` +
        `evenlb accepts, Node refuses: ${[...known].map(([k, n]) => `${k} ${n}`).join(', ')}`,
    );
    const groups = new Map<string, Finding[]>();
    for (const f of findings) {
      const key = `${f.problem} <- ${f.details.join(' + ')}`;
      groups.set(key, [...(groups.get(key) ?? []), f]);
    }
    for (const [k, fs] of groups) console.log(`disagreement ${fs.length}x ${k}\n  ${JSON.stringify(fs[0]?.bytes)}`);
    expect(done).toBeGreaterThanOrEqual(Math.min(MIN_CASES, MAX_CASES));
    // The comparison has teeth: many cases are accepted by both, with the next request checked.
    expect(outcomes.bothAccept).toBeGreaterThan(done * 0.2);
    expect(outcomes.nextChecked).toBeGreaterThan(outcomes.bothAccept * 0.5);
    expect([...groups.keys()]).toEqual([]);
  });

  /** evenlb and Node verdicts on fixed bytes. */
  async function both(text: string): Promise<{ evenlb: Verdict; node: Verdict }> {
    const bytes = Buffer.from(text, 'latin1');
    return { evenlb: evenlbVerdict(bytes).first, node: (await runOnNode(bytes)).first };
  }

  const CHUNKED_HEAD = 'POST /upload HTTP/1.1\r\nHost: h.example\r\nTransfer-Encoding: chunked\r\n\r\n';

  it('a chunk extension outside the RFC grammar is refused as Node refuses it (`1;`)', async () => {
    const v = await both(`${CHUNKED_HEAD}1;\r\na\r\n0\r\n\r\n`);
    expect(v.node).toEqual({ kind: 'reject', reason: 'HPE_STRICT' });
    expect(v.evenlb.kind).toBe('reject');
  });

  it('a trailer field name that is not a token is refused as Node refuses it (`x : 1`)', async () => {
    const v = await both(`${CHUNKED_HEAD}1\r\na\r\n0\r\nx : 1\r\n\r\n`);
    expect(v.node).toEqual({ kind: 'reject', reason: 'HPE_INVALID_HEADER_TOKEN' });
    expect(v.evenlb.kind).toBe('reject');
  });

  it('Content-Length as a trailer field is refused as Node refuses it', async () => {
    const v = await both(`${CHUNKED_HEAD}1\r\na\r\n0\r\nContent-Length: 5\r\n\r\n`);
    expect(v.node).toEqual({ kind: 'reject', reason: 'HPE_INVALID_CONTENT_LENGTH' });
    expect(v.evenlb.kind).toBe('reject');
  });
});
