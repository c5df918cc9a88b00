#!/usr/bin/env node
/**
 * The `evenlb` command. Each subcommand lives in its own file and registers itself on the
 * program here; usage errors (unknown flags, bad values) exit with code 2.
 */
import { Command, CommanderError } from 'commander';
// Registers the k8s:/// scheme with createEndpointSource (proxy and client routes use it).
import '../discovery/kubernetes/index.js';
import { version } from '../version.js';
import { registerDemoCommand } from './demo.js';
import { registerDoctorCommand } from './doctor.js';
import { registerProxyCommand } from './proxy.js';
import { registerSimCommand } from './sim.js';

export function createProgram(): Command {
  const program = new Command('evenlb')
    .description('Even load across Kubernetes pods, whatever the connections do.')
    .version(version, '-V, --version')
    .showHelpAfterError()
    .exitOverride();
  registerDemoCommand(program);
  registerDoctorCommand(program);
  registerProxyCommand(program);
  registerSimCommand(program);
  return program;
}

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
