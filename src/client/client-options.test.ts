/**
 * `BalancedAgentOptions`, `BalancedHttpAgentOptions` and `WebhookClientOptions` are derived
 * from their specs, not written beside them. The type tests pin what callers may pass: a spec
 * entry added, removed, loosened or made required changes the derived type and fails here
 * (under `tsc --noEmit`), so the change is seen in review. The run-time half checks that the
 * parsers take what the types offer and reject, with the same messages, what they refuse.
 */
import type http from 'node:http';
import type { Agent, Dispatcher } from 'undici';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { EndpointSource } from '../discovery/endpoint-source.js';
import { BalancedAgent, type BalancedAgentOptions } from './balanced-agent.js';
import type { RoutingOptions } from './client-routes.js';
import { type BalancedHttpAgentOptions, createHttpAgent } from './http-agent.js';
import { createWebhookClient, type WebhookClientOptions } from './webhook-client.js';

const STATIC = 'static:///127.0.0.1:9';
const SERVICE = { service: { namespace: 'policy', name: 'webhook', path: '/validate' } };

describe('BalancedAgentOptions', () => {
  it('is the routing options and `passthrough`, nothing else', () => {
    expectTypeOf<BalancedAgentOptions>().branded.toEqualTypeOf<
      RoutingOptions & { passthrough?: Dispatcher | Agent.Options }
    >();
    expectTypeOf<keyof BalancedAgentOptions>().toEqualTypeOf<keyof RoutingOptions | 'passthrough'>();
  });

  it('is taken by the parser; what the type refuses, the parser refuses', async () => {
    const options: BalancedAgentOptions = {
      routes: { 'svc.ns.svc:80': STATIC },
      passthrough: { connections: 1 },
      maxRequestsPerConnection: 5,
    };
    await new BalancedAgent(options).close();
    // @ts-expect-error passthrough is a Dispatcher or Agent options
    const bad: BalancedAgentOptions = { passthrough: 42 };
    expect(() => new BalancedAgent(bad)).toThrow(
      /BalancedAgent: option "passthrough" must be a Dispatcher or undici Agent options; received 42/,
    );
    // @ts-expect-error not an option
    const unknown: BalancedAgentOptions = { passThrough: {} };
    expect(() => new BalancedAgent(unknown)).toThrow(/BalancedAgent: unknown option "passThrough"/);
  });
});

describe('BalancedHttpAgentOptions', () => {
  it('is the routing options, `protocol` and `agentOptions`, nothing else', () => {
    expectTypeOf<BalancedHttpAgentOptions>().branded.toEqualTypeOf<
      RoutingOptions & { protocol?: 'http:' | 'https:'; agentOptions?: http.AgentOptions }
    >();
    expectTypeOf<keyof BalancedHttpAgentOptions>().toEqualTypeOf<keyof RoutingOptions | 'protocol' | 'agentOptions'>();
  });

  it('is taken by the parser; what the type refuses, the parser refuses', async () => {
    const options: BalancedHttpAgentOptions = {
      protocol: 'https:',
      agentOptions: { maxTotalSockets: 4 },
      routes: { 'svc.ns.svc:443': STATIC },
    };
    await createHttpAgent(options).close();
    // @ts-expect-error protocol is "http:" or "https:"
    const bad: BalancedHttpAgentOptions = { protocol: 'ftp:' };
    expect(() => createHttpAgent(bad)).toThrow(
      /createHttpAgent: option "protocol" must be one of "http:", "https:"; received "ftp:"/,
    );
  });
});

describe('WebhookClientOptions', () => {
  it('is the routing options less routes, kubernetes and allowH2, plus `timeoutMs` and `endpoints`', () => {
    expectTypeOf<WebhookClientOptions>().branded.toEqualTypeOf<
      Omit<RoutingOptions, 'routes' | 'kubernetes' | 'allowH2'> & {
        timeoutMs?: number;
        endpoints?: string | EndpointSource;
      }
    >();
    expectTypeOf<keyof WebhookClientOptions>().toEqualTypeOf<
      Exclude<keyof RoutingOptions, 'routes' | 'kubernetes' | 'allowH2'> | 'timeoutMs' | 'endpoints'
    >();
  });

  it('is taken by the parser; what the type refuses, the parser refuses', async () => {
    const options: WebhookClientOptions = { endpoints: STATIC, timeoutMs: 500, name: 'hooks' };
    const client = createWebhookClient(SERVICE, options);
    expect(client.stats().name).toBe('hooks');
    await client.close();
    // @ts-expect-error the webhook's route comes from its clientConfig
    const routed: WebhookClientOptions = { routes: {} };
    expect(() => createWebhookClient(SERVICE, routed)).toThrow(/createWebhookClient: unknown option "routes"/);
    // @ts-expect-error the protocol is http/1.1, as kube-apiserver offers it
    const h2: WebhookClientOptions = { allowH2: true };
    expect(() => createWebhookClient(SERVICE, h2)).toThrow(/createWebhookClient: unknown option "allowH2"/);
    // @ts-expect-error a timeout is a number of ms
    const timeout: WebhookClientOptions = { timeoutMs: '5s' };
    expect(() => createWebhookClient(SERVICE, timeout)).toThrow(
      /createWebhookClient: option "timeoutMs" must be a finite number > 0; received "5s"/,
    );
  });
});
