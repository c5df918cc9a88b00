/**
 * Headless Chromium for tests that check pages really render (the demo report, the simulator's
 * HTML report, the proxy dashboard): the system's /usr/bin/chromium driven by playwright-core,
 * with the flags that keep it quiet and offline in a container. playwright-core is loaded on
 * first launch, so importing this module costs nothing in runs that skip the browser.
 *
 * @example
 * const browser = await launchChromium();
 * try {
 *   const page = await browser.newPage();
 * } finally {
 *   await browser.close();
 * }
 */
import type { Browser } from 'playwright-core';

/** Starts headless Chromium; the caller closes it. */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
