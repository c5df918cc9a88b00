/** The default `maxConnections`: half of the open-file soft limit past a reserve, from `/proc/self/limits`. */
import { describe, expect, it } from 'vitest';
import { defaultMaxConnections, FALLBACK_OPEN_FILES, openFileLimit } from './connection-budget.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            256                  4096                 files
Max locked memory         8388608              8388608              bytes
`;

describe('connection budget', () => {
  it('reads the soft open-file limit', () => {
    expect(openFileLimit(LIMITS)).toBe(256);
    expect(openFileLimit(LIMITS.replace('256 ', 'unlimited '))).toBeUndefined();
    expect(openFileLimit('')).toBeUndefined();
  });

  it('derives the default from the limit, with a floor and a fallback', () => {
    expect(defaultMaxConnections(256)).toBe(96);
    expect(defaultMaxConnections(20_000)).toBe(9968);
    expect(defaultMaxConnections(40)).toBe(16);
    expect(defaultMaxConnections(FALLBACK_OPEN_FILES)).toBe(480);
  });

  it('reads this process’s own limit on Linux', () => {
    if (process.platform !== 'linux') return;
    expect(openFileLimit()).toBeGreaterThan(0);
  });
});
