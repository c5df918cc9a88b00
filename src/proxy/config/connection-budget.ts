/**
 * The default `maxConnections` of a listener, derived from the process's open-file limit: each
 * client connection may need a second descriptor for its upstream socket, and the process keeps
 * some for itself (listening sockets, log and config files, discovery, the admin server). So a
 * listener admits at most `(soft limit − 64) / 2` connections by default, never fewer than 16.
 * On Linux the soft limit is read from `/proc/self/limits` ("Max open files"); elsewhere, or
 * when it cannot be read or is unlimited, the limit is taken to be 1024 for the derivation
 * (the common default soft limit, so a default of 480). An explicit `limits.maxConnections`
 * overrides it (0 = unlimited).
 */
import { readFileSync } from 'node:fs';

/** Descriptors kept for the process itself. */
const RESERVED_FDS = 64;
/** The soft limit assumed when it cannot be read. */
export const FALLBACK_OPEN_FILES = 1024;
const MIN_CONNECTIONS = 16;

/**
 * The soft "Max open files" limit of this process from `/proc/self/limits`, or undefined when it
 * cannot be read (not Linux) or is unlimited.
 *
 * @example
 * openFileLimit(); // 20000 under `ulimit -n 20000`
 */
export function openFileLimit(limitsText?: string): number | undefined {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  const n = Number(soft);
  return soft === undefined || !Number.isInteger(n) || n <= 0 ? undefined : n;
}

/**
 * The default `maxConnections` for a listener under an open-file limit of `openFiles`.
 *
 * @example
 * defaultMaxConnections(256); // 96
 */
export function defaultMaxConnections(openFiles: number = openFileLimit() ?? FALLBACK_OPEN_FILES): number {
  return Math.max(MIN_CONNECTIONS, Math.floor((openFiles - RESERVED_FDS) / 2));
}
