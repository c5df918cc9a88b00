/**
 * The wire between the demo's orchestrator and its child processes (pods, the load generator,
 * the proxy): newline-delimited JSON over the child's stdin and stdout. Plain pipes survive
 * `ip netns exec` (which only execs) and need nothing from the spawner but `stdio: 'pipe'`.
 * A child treats the end of its stdin as "the parent is gone" and exits at once, so a crashed
 * or killed orchestrator never leaves pods behind.
 */
import type { Readable, Writable } from 'node:stream';

/** Reads newline-delimited JSON from `input`, calling `onMessage` per object; bad lines go to `onBadLine`. */
export function readJsonLines(
  input: Readable,
  onMessage: (message: Record<string, unknown>) => void,
  onBadLine: (line: string) => void = () => {},
): void {
  let buffered = '';
  input.setEncoding('utf8');
  input.on('data', (chunk: string) => {
    buffered += chunk;
    for (;;) {
      const nl = buffered.indexOf('\n');
      if (nl < 0) break;
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line === '') continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        onBadLine(line);
        continue;
      }
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
        onMessage(parsed as Record<string, unknown>);
      } else onBadLine(line);
    }
  });
}

/** Writes one message as a JSON line; silently drops it when the stream is gone. */
export function writeJsonLine(output: Writable, message: object): void {
  if (output.destroyed || output.writableEnded) return;
  try {
    output.write(`${JSON.stringify(message)}\n`);
  } catch {
    // The peer went away; the lifecycle code notices through 'close'.
  }
}

/**
 * For child processes: parses messages from the parent on stdin and exits (status 0) the moment
 * stdin ends, so children die with their parent. `onParentGone` runs first, synchronously.
 */
export function listenToParent(onMessage: (message: Record<string, unknown>) => void, onParentGone?: () => void): void {
  readJsonLines(process.stdin, onMessage);
  const gone = (): void => {
    onParentGone?.();
    process.exit(0);
  };
  process.stdin.on('end', gone);
  process.stdin.on('close', gone);
  process.stdin.on('error', gone);
}

/** For child processes: sends a message to the parent on stdout. */
export function sendToParent(message: object): void {
  writeJsonLine(process.stdout, message);
}
