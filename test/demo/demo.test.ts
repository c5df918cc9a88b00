/**
 * `evenlb demo` end to end, on the built CLI: real pods, clients and proxy as child processes.
 * The pinned phase must show the problem, the evenlb client and proxy phases its cure, every
 * phase asked for must run to completion in order, the HTML report must draw every chart in
 * Chromium, and nothing may be left behind — after a normal run and after Ctrl-C mid-run.
 *
 * The run here takes the default phases but the last: the `sidecar` phase (twenty processes,
 * the longest to start) runs three times over in `sidecar-phase.test.ts`, against its own goal;
 * its app's imports are checked in `plain-app.test.ts`; the default phase list itself in
 * `src/demo/phase-result.test.ts`.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompletedPhase, PhaseResult } from '../../src/demo/phase-result.js';
import { launchChromium } from '../support/browser.js';
import { netnsSupport } from '../support/netns-support.js';
import {
  accepts,
  cliPath,
  demoProcesses,
  eventually,
  netnsList,
  runBuiltCli,
  runDemoInterruptedWhenLive,
} from './demo-helpers.js';

interface DemoJson {
  readonly runId: string;
  readonly totalMs: number;
  readonly phases: readonly PhaseResult[];
}

/** The default phases but `sidecar` (see above). */
const PHASE_IDS = ['pinned', 'client', 'proxy', 'recycler'] as const;

const dir = mkdtempSync(join(tmpdir(), 'evenlb-demo-test-'));
const jsonPath = join(dir, 'demo.json');
const htmlPath = join(dir, 'demo-report.html');
let run: Awaited<ReturnType<typeof runBuiltCli>>;
let results: DemoJson;

beforeAll(async () => {
  if (!existsSync(cliPath)) throw new Error('build first: npx tsup');
  run = await runBuiltCli(
    [
      'demo',
      '--phases',
      PHASE_IDS.join(','),
      '--duration',
      '8s',
      '--seed',
      '7',
      '--json',
      jsonPath,
      '--output',
      htmlPath,
      '--progress',
      'plain',
    ],
    // Four 8 s phases take about a minute on an idle two-core machine and up to two on a
    // shared one (load average 10+: pod starts and the rolling restart's slots stretch); the
    // deadline only catches a hang.
    { timeoutMs: 300_000 },
  );
  results = JSON.parse(readFileSync(jsonPath, 'utf8')) as DemoJson;
}, 330_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs in the page: painted pixels and distinct colours of every canvas. */
const CANVAS_PIXELS = `[...document.querySelectorAll('canvas')].map((c) => {
  const ctx = c.getContext('2d');
  if (ctx === null || c.width === 0 || c.height === 0) return { id: c.id, painted: 0, colours: 0 };
  const data = ctx.getImageData(0, 0, c.width, c.height).data;
  let painted = 0;
  const colours = new Set();
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] > 0) {
      painted++;
      colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    }
  }
  return { id: c.id, painted, colours: colours.size };
})`;

function phase(id: string): PhaseResult {
  const p = results.phases.find((x) => x.id === id);
  if (p === undefined) throw new Error(`phase ${id} missing from the results`);
  return p;
}

/** The phase's figures; fails the test when the phase did not complete. */
function completed(id: string): CompletedPhase {
  const p = phase(id);
  if (p.status !== 'ok') throw new Error(`phase ${id} ${p.status}: ${p.reason}`);
  return p;
}

interface SideRuns {
  readonly ctrlC: ReturnType<typeof runDemoInterruptedWhenLive>;
  readonly netfilter: ReturnType<typeof runBuiltCli>;
  /** Undefined where network namespaces are not available (its test is skipped). */
  readonly netfilterCtrlC: ReturnType<typeof runDemoInterruptedWhenLive> | undefined;
}
let side: SideRuns | undefined;

/**
 * The three runs after the main one — Ctrl-C on loopback, a short netfilter run, Ctrl-C inside a
 * network namespace — start together, at the first of their tests (after the main run's own
 * checks, so no other run's pod can take a port they look at): none of them measures a balance
 * the others' load could move (conntrack pins the pinned phase's connections whatever the pace;
 * each Ctrl-C run only needs its first live line), and each spends most of its time waiting on
 * its children, so together they take about as long as the longest of them alone.
 */
function sideRuns(): SideRuns {
  if (side !== undefined) return side;
  const ctrlC = runDemoInterruptedWhenLive(
    ['demo', '--duration', '20s', '--phases', 'pinned,client', '--progress', 'plain', '--output', join(dir, 'x.html')],
    60_000,
  );
  /** The pinned phase through kube-proxy rules, for `duration`. */
  const netfilterPinned = (duration: string): string[] => [
    'demo',
    '--dataplane',
    'netfilter',
    '--phases',
    'pinned',
    '--duration',
    duration,
  ];
  const netfilter = runBuiltCli(
    [...netfilterPinned('5s'), '--json', join(dir, 'netfilter.json'), '--output', join(dir, 'n.html')],
    { timeoutMs: 90_000 },
  );
  const netfilterCtrlC = netnsSupport().ok
    ? runDemoInterruptedWhenLive(
        [...netfilterPinned('20s'), '--progress', 'plain', '--output', join(dir, 'y.html')],
        60_000,
      )
    : undefined;
  // A run that fails is reported by its own test; the others must not see it unhandled.
  for (const run of [ctrlC, netfilter, netfilterCtrlC]) run?.catch(() => undefined);
  side = { ctrlC, netfilter, netfilterCtrlC };
  return side;
}

describe('evenlb demo', () => {
  it('exits 0 and prints a table per phase and a summary', () => {
    expect(run.code, run.stderr).toBe(0);
    for (const id of PHASE_IDS) expect(run.stdout).toContain(`== ${phase(id).title} ==`);
    expect(run.stdout).toMatch(/phase\s+max\/mean\s+CoV/);
    expect(run.stderr).toMatch(/pinned .*max\/mean [0-9.]+/);
  });

  it('runs every phase asked for, in order, each to completion', () => {
    expect(results.phases.map((p) => p.id)).toEqual([...PHASE_IDS]);
    for (const p of results.phases) expect(p.status, `${p.id}: ${p.status !== 'ok' ? p.reason : ''}`).toBe('ok');
  });

  it('pinned: uneven, or the new pod starved after the scale-out', () => {
    const p = completed('pinned');
    expect(p.maxOverMean >= 1.3 || p.newPodShareOfFair <= 0.05, JSON.stringify(p.pods)).toBe(true);
  });

  it.each(['client', 'proxy'])('%s: even, the new pod gets its share, no request fails', (id) => {
    const p = completed(id);
    expect(p.maxOverMean).toBeLessThanOrEqual(1.1);
    expect(p.newPodShareOfFair).toBeGreaterThanOrEqual(0.8);
    expect(p.failedRequests, JSON.stringify(p.errorsByCode)).toBe(0);
    expect(p.okRequests).toBeGreaterThan(0);
  });

  it('leaves no process and no listener behind', async () => {
    expect(await eventually(() => demoProcesses(results.runId).length === 0, 5000)).toBe(true);
    for (const id of PHASE_IDS) {
      for (const pod of completed(id).pods)
        expect(await accepts(pod.address, pod.port), `${pod.name} ${pod.address}:${pod.port}`).toBe(false);
    }
  });

  it('writes a self-contained HTML report whose charts all draw in Chromium', async (ctx) => {
    const html = readFileSync(htmlPath, 'utf8');
    expect(html).not.toMatch(/<script[^>]+src=/);
    const browser = await launchChromium(ctx);
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const requests: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith('file:')) requests.push(r.url());
      });
      await page.goto(`file://${htmlPath}`);
      await page.waitForFunction("document.body.dataset.chartsDrawn === 'true'", undefined, { timeout: 10_000 });
      await page.screenshot({ path: join(dir, 'report.png'), fullPage: true });
      const canvases = (await page.evaluate(CANVAS_PIXELS)) as { id: string; painted: number; colours: number }[];
      expect(canvases).toHaveLength(PHASE_IDS.length);
      for (const c of canvases) {
        // Axes, labels and one coloured line per pod: many painted pixels in many colours.
        expect(c.painted, c.id).toBeGreaterThan(2000);
        expect(c.colours, c.id).toBeGreaterThan(5);
      }
      expect(requests).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);

  it('stops everything on Ctrl-C mid-run and exits 130', async () => {
    const interrupted = await sideRuns().ctrlC;
    expect(interrupted.sigintSent).toBe(true);
    expect(interrupted.code, interrupted.stderr).toBe(130);
    const runId = /run ([0-9a-f]{8})/.exec(interrupted.stderr)?.[1];
    expect(runId).toBeDefined();
    expect(await eventually(() => demoProcesses(runId as string).length === 0, 5000)).toBe(true);
    expect(existsSync(join(dir, 'x.html'))).toBe(false);
  }, 60_000);

  it('--dataplane netfilter: real kube-proxy rules when root, else says what is needed and exits 2', async () => {
    const support = netnsSupport();
    const json = join(dir, 'netfilter.json');
    const r = await sideRuns().netfilter;
    const ours = (): string[] => netnsList().filter((n) => n.startsWith(`evenlb-${r.pid}-`));
    if (!support.ok) {
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--dataplane netfilter needs Linux, root/);
      return;
    }
    expect(r.code, r.stderr).toBe(0);
    const pinned = (JSON.parse(readFileSync(json, 'utf8')) as DemoJson).phases[0];
    expect(pinned?.status).toBe('ok');
    if (pinned?.status !== 'ok') return;
    expect(pinned.dataplane).toMatch(/iptables/);
    // Conntrack pins every connection: nothing moves to the new pod until connections reopen.
    expect(pinned.maxOverMean >= 1.3 || pinned.newPodShareOfFair <= 0.05).toBe(true);
    expect(ours()).toEqual([]);
  }, 60_000);

  it('--dataplane netfilter: Ctrl-C removes the namespace and every process in it', async (ctx) => {
    const support = netnsSupport();
    if (!support.ok) ctx.skip(support.reason);
    const r = await (sideRuns().netfilterCtrlC as NonNullable<SideRuns['netfilterCtrlC']>);
    expect(r.code, r.stderr).toBe(130);
    const runId = /run ([0-9a-f]{8})/.exec(r.stderr)?.[1] as string;
    expect(await eventually(() => demoProcesses(runId).length === 0, 5000)).toBe(true);
    expect(netnsList().filter((n) => n.startsWith(`evenlb-${r.pid}-`))).toEqual([]);
  }, 60_000);

  const usageErrors: readonly (readonly [readonly string[], RegExp])[] = [
    [['--pods', '1'], /"pods" must be an integer between 2 and 50/],
    [['--phases', 'pinned,nope'], /unknown phase "nope"/],
    [['--duration', 'soon'], /expected a duration/],
    [['--output', '/nonexistent-dir/report.html'], /--output .*does not exist/],
  ];
  /** Each usage error is its own CLI process; all start with the first case (each exits at once). */
  let usageRuns: Promise<Awaited<ReturnType<typeof runBuiltCli>>>[] | undefined;
  it.each(usageErrors.map(([args, message], i) => [args, message, i] as const))(
    'rejects %j with exit 2',
    async (_args, message, i) => {
      if (usageRuns === undefined) {
        usageRuns = usageErrors.map(([args]) => runBuiltCli(['demo', ...args], { timeoutMs: 20_000 }));
        // A run that fails is reported by its own case; the others must not see it unhandled.
        for (const run of usageRuns) run.catch(() => undefined);
      }
      const r = await (usageRuns[i] as (typeof usageRuns)[number]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
    },
  );
});
