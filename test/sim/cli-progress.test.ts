/** The progress bar (dataplane, simulated time, events per second): drawn on a terminal's stderr, absent when stderr is not a terminal or with --no-progress. */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerSimCommand } from '../../src/cli/sim.js';

async function run(args: readonly string[], isTTY: boolean) {
  let stdout = '';
  let stderr = '';
  const program = new Command('evenlb').exitOverride();
  registerSimCommand(program, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t), isTTY },
  });
  await program.parseAsync(['node', 'evenlb', 'sim', ...args]);
  return { stdout, stderr };
}

const args = ['--scenario', 'steady', '--duration', '5s', '--dataplanes', 'iptables'];

describe('evenlb sim progress', () => {
  it('draws a bar on a terminal and clears it before the table', async () => {
    const r = await run(args, true);
    expect(r.stderr).toContain('\r\x1b[Ksimulating [');
    expect(r.stderr).toMatch(
      /simulating \[[#-]{30}\] +\d+% {2}iptables at \d+\.\d s simulated, \d+(\.\d)?[kM]? events\/s/,
    );
    expect(r.stderr.endsWith('\r\x1b[K')).toBe(true);
    expect(r.stdout).toContain('evenlb sim: steady');
  });

  it('stays silent when stderr is not a terminal, or with --no-progress', async () => {
    expect((await run(args, false)).stderr).toBe('');
    expect((await run([...args, '--no-progress'], true)).stderr).toBe('');
  });

  it('prints the same table in-process as the built CLI does for the same seed', async () => {
    const a = await run([...args, '--seed', '5'], false);
    const b = await run([...args, '--seed', '5'], false);
    expect(b.stdout).toBe(a.stdout);
  });
});
