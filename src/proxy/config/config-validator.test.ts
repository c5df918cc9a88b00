import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { configValidatorSource, GENERATED_PATH } from '../../../scripts/config-validator-source.mjs';
import { proxyConfigSchema } from './config-schema.js';
import validateProxyConfig from './config-validator.generated.js';

const root = join(import.meta.dirname, '../../..');

describe('the generated proxy configuration validator', () => {
  it("is the schema's: regenerate with `npm run generate` after changing config-schema.ts", () => {
    expect(readFileSync(join(root, GENERATED_PATH), 'utf8')).toBe(configValidatorSource(proxyConfigSchema));
  });

  // The same verdicts and first errors as the schema compiled at run time, as the proxy did.
  const compiled = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true }).compile(proxyConfigSchema);
  const cluster = { name: 'app', target: 'static:///127.0.0.1:8080' };
  const cases: Record<string, unknown> = {
    'a minimal configuration': { listeners: [{ address: '127.0.0.1:8080' }], clusters: [cluster] },
    'an unknown field': { listeners: [{ address: '127.0.0.1:8080', colour: 'red' }], clusters: [cluster] },
    'an address without a port': { listeners: [{ address: '127.0.0.1' }], clusters: [cluster] },
    'an empty TLS certificate path (minLength, counted in code points)': {
      listeners: [{ address: '127.0.0.1:8443', protocol: 'https', tls: { cert: '', key: 'k.pem' } }],
      clusters: [cluster],
    },
    'a policy of the wrong type': { listeners: [{ address: '[::1]:80' }], clusters: [{ ...cluster, policy: 7 }] },
    'no clusters': { listeners: [{ address: '127.0.0.1:8080' }] },
  };
  for (const [what, config] of Object.entries(cases)) {
    it(`judges ${what} as the compiled schema does`, () => {
      const ok = validateProxyConfig(config);
      expect(ok).toBe(compiled(config));
      expect(validateProxyConfig.errors ?? null).toEqual(compiled.errors ?? null);
    });
  }
});
