/**
 * Headless Chromium for tests that check pages really render (the demo report, the simulator's
 * HTML report, the proxy dashboard), driven by playwright-core with the flags that keep it quiet
 * and offline in a container.
 *
 * The browser is looked for in this order, the first that exists wins:
 * 1. `EVENLB_CHROMIUM` — a path to a Chromium or Chrome binary (an error if it does not exist);
 * 2. the system's Chromium: `/usr/bin/chromium`, `/usr/bin/chromium-browser`;
 * 3. the Chromium shipped inside the `@sparticuz/chromium` dev dependency (installed by `npm ci`
 *    from the npm registry, unpacked on first use to the temporary folder).
 *
 * When none can be had (another platform than Linux x64, say), a browser test skips with the
 * reason — unless `EVENLB_REQUIRE_BROWSER=1` (set by `.ci/run`), which makes it a failure.
 * playwright-core and the packaged Chromium are loaded on first launch, so importing this
 * module costs nothing in runs that never start a browser.
 *
 * @example
 * it('renders', async (ctx) => {
 *   const browser = await launchChromium(ctx);
 *   try {
 *     const page = await browser.newPage();
 *   } finally {
 *     await browser.close();
 *   }
 * });
 */
import { accessSync, constants } from 'node:fs';
import type { Browser } from 'playwright-core';

/** Where a browser came from, for the skip reason and the test log. */
export type ChromiumLocation =
  | { readonly found: true; readonly path: string; readonly source: string }
  | { readonly found: false; readonly tried: readonly string[] };

const SYSTEM_CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'] as const;

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
] as const;

/** The subset of vitest's test context this module needs. */
export interface SkippableContext {
  skip(note?: string): never;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

let located: Promise<ChromiumLocation> | undefined;

/** Finds a browser in the documented order; the answer is cached for the process. */
export function locateChromium(): Promise<ChromiumLocation> {
  located ??= locate();
  return located;
}

async function locate(): Promise<ChromiumLocation> {
  const tried: string[] = [];
  const fromEnv = process.env.EVENLB_CHROMIUM;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (isExecutable(fromEnv)) return { found: true, path: fromEnv, source: 'EVENLB_CHROMIUM' };
    throw new Error(`EVENLB_CHROMIUM=${fromEnv}: expected an executable Chromium binary, found none there`);
  }
  tried.push('EVENLB_CHROMIUM (unset)');
  for (const path of SYSTEM_CHROMIUM) {
    if (isExecutable(path)) return { found: true, path, source: 'system' };
    tried.push(path);
  }
  try {
    const { default: packaged } = await import('@sparticuz/chromium');
    const path = await packaged.executablePath();
    if (isExecutable(path)) return { found: true, path, source: '@sparticuz/chromium' };
    tried.push(`@sparticuz/chromium (${path} is not executable)`);
  } catch (err) {
    tried.push(`@sparticuz/chromium (${(err as Error).message})`);
  }
  return { found: false, tried };
}

/**
 * Starts headless Chromium; the caller closes it. Without a browser the test is skipped with the
 * places tried, or fails when `EVENLB_REQUIRE_BROWSER=1`.
 */
export async function launchChromium(ctx: SkippableContext): Promise<Browser> {
  const where = await locateChromium();
  if (!where.found) {
    const reason = `no Chromium to run this browser test (tried ${where.tried.join('; ')})`;
    if (process.env.EVENLB_REQUIRE_BROWSER === '1') throw new Error(`${reason}; EVENLB_REQUIRE_BROWSER=1 requires one`);
    ctx.skip(reason);
  }
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: where.path, args: [...FLAGS] });
}
