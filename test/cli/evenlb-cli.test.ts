/**
 * The `evenlb` binary as shipped: dist/cli/main.js, the file package.json's `bin` names (built
 * by `npm ci` through `prepare`, and by `npm test` before the tests run).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, runCli } from '../support/run-cli.js';

const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};
const bin = join(repoRoot, pkg.bin.evenlb ?? 'missing');
const run = (args: string[]) => runCli(bin, args, { timeoutMs: 30_000 });

describe('evenlb CLI', () => {
  it('--help lists every command', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    for (const command of ['demo', 'proxy', 'sim']) expect(r.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
  });

  it('--version prints the package version', async () => {
    const r = await run(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  const usageErrors = [
    { args: ['--no-such-flag'], says: /unknown option '--no-such-flag'/ },
    { args: ['no-such-command'], says: /unknown command 'no-such-command'/ },
    { args: ['sim', '--no-such-flag'], says: /unknown option '--no-such-flag'/ },
    { args: ['proxy', '--upstream', 'static:///not-an-ip:80'], says: /not-an-ip/ },
  ];
  it.each(usageErrors)('usage error $args exits 2 and says why', async ({ args, says }) => {
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(says);
  });
});
