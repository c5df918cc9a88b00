/**
 * `evenlb sim`'s progress bar: on a terminal's stderr only, redrawn at most every 100 ms with
 * the dataplane being simulated, its simulated time and the events handled per wall-clock
 * second; cleared before the result is printed. Wall-clock time is read here, in the CLI, never
 * in the simulator.
 */
import { systemClock } from '../core/clock.js';
import type { ProgressStatus } from '../sim/index.js';

/** Where the bar is drawn. */
export interface ProgressStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** `1.2M`, `350k`, `12`. */
function compact(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${Math.round(n / 1e3)}k`;
  return String(Math.round(n));
}

/**
 * A progress bar on a terminal, nothing otherwise; redrawn at most every 100 ms, with the
 * dataplane, its simulated time and the events handled per (wall-clock) second.
 *
 * @example
 * const bar = progressBar(process.stderr, true);
 * bar.update(0.5, { dataplane: 'iptables', simulatedMs: 1000, events: 100_000 });
 * bar.done();
 */
export function progressBar(
  stderr: ProgressStream,
  enabled: boolean,
): { update(f: number, status: ProgressStatus): void; done(): void } {
  if (!enabled || stderr.isTTY !== true) return { update() {}, done() {} };
  const startedMs = systemClock.now();
  let last = Number.NEGATIVE_INFINITY;
  let shown = false;
  return {
    update(f, status) {
      const now = systemClock.now();
      if (now - last < 100) return;
      last = now;
      shown = true;
      const width = 30;
      const filled = Math.round(Math.min(1, f) * width);
      const rate = status.events / Math.max(0.001, (now - startedMs) / 1000);
      stderr.write(
        `\r\x1b[Ksimulating [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(f * 100).toFixed(0).padStart(3)}%` +
          `  ${status.dataplane} at ${(status.simulatedMs / 1000).toFixed(1)} s simulated, ${compact(rate)} events/s`,
      );
    },
    done() {
      if (shown) stderr.write('\r\x1b[K');
    },
  };
}
