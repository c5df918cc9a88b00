#!/usr/bin/env node
/**
 * The `evenlb` command. Each subcommand lives in its own file and registers itself on the
 * program (program.ts); usage errors (unknown flags, bad values) exit with code 2. Declaring the
 * subcommands loads only commander and their flag parsers: each loads what it runs on (the
 * proxy, the simulator, the demo, the doctor, Kubernetes discovery) in its action, so `--help`,
 * `--version` and a usage error start at once.
 */
import { CommanderError } from 'commander';
import { createProgram } from './program.js';

async function main(argv: readonly string[]): Promise<void> {
  const program = createProgram();
  try {
    await program.parseAsync(argv as string[]);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; every usage error exits 2.
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    throw err;
  }
}

main(process.argv).catch((err: unknown) => {
  process.stderr.write(`evenlb: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
