/**
 * The `evenlb` command's definition: the program and its subcommands, each registered from its
 * own file. Kept apart from `main.ts` (which parses `process.argv` as soon as it is loaded) so
 * that the definition can be read without running anything — the docs tests compare the flags
 * written in README.md and docs/ with these definitions.
 */
import { Command } from 'commander';
import { version } from '../version.js';
import { registerDemoCommand } from './demo.js';
import { registerDoctorCommand } from './doctor.js';
import { registerProxyCommand } from './proxy.js';
import { registerSimCommand } from './sim.js';

/**
 * The `evenlb` program with every subcommand. Usage errors throw a `CommanderError` (exit
 * override) for the caller to turn into exit code 2.
 *
 * @example
 * await createProgram().parseAsync(['node', 'evenlb', 'sim', '--list']);
 */
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
