/**
 * The live line on stderr while a phase runs. On a terminal a progress bar is redrawn in
 * place; otherwise (CI logs, pipes) a plain line is printed every few seconds. Both show the
 * current max/mean of the ready pods' request rates.
 */
import type { PhaseProgress } from './run-phase.js';

const PLAIN_EVERY_MS = 3000;
const BAR_WIDTH = 24;

export type ProgressStyle = 'tty' | 'plain' | 'none';

export class ProgressLine {
  readonly #out: NodeJS.WritableStream;
  readonly #style: ProgressStyle;
  #lastPlainMs = Number.NEGATIVE_INFINITY;
  #drawn = false;

  constructor(out: NodeJS.WritableStream, style: ProgressStyle) {
    this.#out = out;
    this.#style = style;
  }

  update(p: PhaseProgress): void {
    if (this.#style === 'none') return;
    const seconds = `${(p.elapsedMs / 1000).toFixed(1)}/${(p.durationMs / 1000).toFixed(0)}s`;
    const figures = `max/mean ${p.currentMaxOverMean.toFixed(2)}  pods ${p.pods}  ok ${p.ok}  failed ${p.failed}`;
    if (this.#style === 'tty') {
      const done = Math.max(0, Math.min(BAR_WIDTH, Math.round((p.elapsedMs / p.durationMs) * BAR_WIDTH)));
      const bar = `${'█'.repeat(done)}${'░'.repeat(BAR_WIDTH - done)}`;
      this.#out.write(`\r\x1b[K  ${p.phase.id.padEnd(8)} ${bar} ${seconds.padStart(9)}  ${figures}`);
      this.#drawn = true;
      return;
    }
    if (p.elapsedMs - this.#lastPlainMs >= PLAIN_EVERY_MS) {
      this.#lastPlainMs = p.elapsedMs;
      this.#out.write(`  ${p.phase.id.padEnd(8)} ${seconds.padStart(9)}  ${figures}\n`);
    }
  }

  /** Ends the current phase's line. */
  finish(): void {
    if (this.#style === 'tty' && this.#drawn) this.#out.write('\n');
    this.#drawn = false;
    this.#lastPlainMs = Number.NEGATIVE_INFINITY;
  }

  /** Prints a message on its own line. */
  note(text: string): void {
    if (this.#style === 'tty' && this.#drawn) this.#out.write('\r\x1b[K');
    this.#out.write(`${text}\n`);
    this.#drawn = false;
  }
}
