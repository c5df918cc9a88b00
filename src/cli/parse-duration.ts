/**
 * The CLI's duration flags (`--duration 30s`, `--scrape-interval 10s`, `--drain-timeout 20s`):
 * one reading, shared by every subcommand, kept apart from the subcommands' own modules so that
 * declaring a flag loads nothing else.
 */
import { InvalidArgumentError } from 'commander';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `250ms`, `30s`, `2m`, `1h`, or a bare number of milliseconds. */
export function parseDuration(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (m === null) throw new InvalidArgumentError('expected a duration like 500ms, 30s, 2m or 1h.');
  const ms = Number(m[1]) * (UNITS[m[2] ?? 'ms'] as number);
  if (ms <= 0) throw new InvalidArgumentError('expected a duration > 0.');
  return ms;
}
