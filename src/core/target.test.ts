import { describe, expect, it } from 'vitest';
import { ErrorCodes, EvenlbError } from './errors.js';
import { parseTarget, type Target } from './target.js';

/** A target without its `uri` (distributes over the union). */
type TargetFields = Target extends infer T ? (T extends Target ? Omit<T, 'uri'> : never) : never;

describe('parseTarget: valid forms', () => {
  const cases: { uri: string; expected: TargetFields }[] = [
    { uri: 'static:///10.0.0.1:80', expected: { scheme: 'static', endpoints: [{ address: '10.0.0.1', port: 80 }] } },
    {
      uri: 'static:///10.0.0.1:8443,10.0.0.2:8443',
      expected: {
        scheme: 'static',
        endpoints: [
          { address: '10.0.0.1', port: 8443 },
          { address: '10.0.0.2', port: 8443 },
        ],
      },
    },
    {
      uri: 'static:///[::1]:8080, 127.0.0.1:65535',
      expected: {
        scheme: 'static',
        endpoints: [
          { address: '::1', port: 8080 },
          { address: '127.0.0.1', port: 65535 },
        ],
      },
    },
    { uri: 'static:///[fd00::a:1]:1', expected: { scheme: 'static', endpoints: [{ address: 'fd00::a:1', port: 1 }] } },
    {
      uri: 'dns:///webhook.policy.svc.cluster.local:8443',
      expected: { scheme: 'dns', host: 'webhook.policy.svc.cluster.local', port: 8443 },
    },
    { uri: 'dns:///localhost:53', expected: { scheme: 'dns', host: 'localhost', port: 53 } },
    { uri: 'dns:///example.com.:443', expected: { scheme: 'dns', host: 'example.com.', port: 443 } },
    {
      uri: 'dns:///_grpc._tcp.example.com:443',
      expected: { scheme: 'dns', host: '_grpc._tcp.example.com', port: 443 },
    },
    { uri: 'dns:///10.1.2.3:80', expected: { scheme: 'dns', host: '10.1.2.3', port: 80 } },
    { uri: 'dns:///[::1]:80', expected: { scheme: 'dns', host: '::1', port: 80 } },
    {
      uri: 'k8s:///webhook.policy:8443',
      expected: { scheme: 'k8s', name: 'webhook', namespace: 'policy', port: 8443 },
    },
    {
      uri: 'k8s:///webhook.policy:https',
      expected: { scheme: 'k8s', name: 'webhook', namespace: 'policy', port: 'https' },
    },
    {
      uri: 'k8s:///a-b.kube-system:grpc-web',
      expected: { scheme: 'k8s', name: 'a-b', namespace: 'kube-system', port: 'grpc-web' },
    },
    { uri: 'k8s:///svc.ns:h2c', expected: { scheme: 'k8s', name: 'svc', namespace: 'ns', port: 'h2c' } },
    { uri: 'file:///etc/evenlb/endpoints.json', expected: { scheme: 'file', path: '/etc/evenlb/endpoints.json' } },
    { uri: 'file:///tmp/my%20endpoints.json', expected: { scheme: 'file', path: '/tmp/my endpoints.json' } },
  ];
  it.each(cases)('$uri', ({ uri, expected }) => {
    const t = parseTarget(uri);
    expect(t).toEqual({ ...expected, uri });
    expect(Object.isFrozen(t)).toBe(true);
  });
});

describe('parseTarget: malformed input', () => {
  // Each case names the part of the message that identifies what is wrong.
  const cases: { uri: unknown; names: string }[] = [
    { uri: '', names: 'not of the form SCHEME:///PATH' },
    { uri: '10.0.0.1:80', names: 'not of the form SCHEME:///PATH' },
    { uri: 'static:10.0.0.1:80', names: 'not of the form SCHEME:///PATH' },
    { uri: ' static:///10.0.0.1:80', names: 'not of the form SCHEME:///PATH' },
    { uri: 'http:///10.0.0.1:80', names: 'unknown scheme "http"' },
    { uri: 'xds:///svc', names: 'unknown scheme "xds"' },
    { uri: 'static://10.0.0.1:80/', names: 'an authority "10.0.0.1:80" is not supported (use three slashes)' },
    { uri: 'static:///', names: 'nothing after the scheme' },
    { uri: 'static:///10.0.0.1', names: 'missing ":PORT" in "10.0.0.1"' },
    { uri: 'static:///10.0.0.1:', names: 'port "" is not a number' },
    { uri: 'static:///10.0.0.1:http', names: 'port "http" is not a number' },
    { uri: 'static:///10.0.0.1:0', names: 'port 0 is out of range 1-65535' },
    { uri: 'static:///10.0.0.1:65536', names: 'port 65536 is out of range 1-65535' },
    { uri: 'static:///10.0.0.1:123456', names: 'port "123456" is not a number' },
    { uri: 'static:///10.0.0.1:80,', names: 'an empty entry in the endpoint list' },
    { uri: 'static:///,10.0.0.1:80', names: 'an empty entry in the endpoint list' },
    { uri: 'static:///host.example:80', names: '"host.example" is not an IP address' },
    { uri: 'static:///10.0.0.256:80', names: '"10.0.0.256" is not an IP address' },
    { uri: 'static:///::1:80', names: 'IPv6 address "::1" must be in brackets' },
    { uri: 'static:///[::1:80', names: 'unclosed "[" in "[::1:80"' },
    { uri: 'static:///[::1]80', names: 'missing ":PORT" after "[::1]"' },
    { uri: 'static:///[::1]', names: 'missing ":PORT" after "[::1]"' },
    { uri: 'static:///[nope]:80', names: '"nope" is not an IP address' },
    { uri: 'dns:///example.com', names: 'missing ":PORT" in "example.com"' },
    { uri: 'dns:///exa mple.com:80', names: '"exa mple.com" is not a valid host name' },
    { uri: 'dns:///-bad.example:80', names: '"-bad.example" is not a valid host name' },
    { uri: 'dns:///a..b:80', names: '"a..b" is not a valid host name' },
    { uri: 'dns:///:80', names: '"" is not a valid host name' },
    { uri: 'k8s:///webhook:443', names: '"webhook" is not NAME.NAMESPACE' },
    { uri: 'k8s:///webhook.policy', names: 'missing ":PORT" or ":PORT_NAME" in "webhook.policy"' },
    { uri: 'k8s:///a.b.c:443', names: '"a.b.c" is not NAME.NAMESPACE' },
    { uri: 'k8s:///Webhook.policy:443', names: 'Service name "Webhook" is not a DNS label' },
    { uri: 'k8s:///webhook.pol_icy:443', names: 'namespace "pol_icy" is not a DNS label' },
    { uri: 'k8s:///webhook.policy:', names: 'empty port' },
    { uri: 'k8s:///webhook.policy:0', names: 'port 0 is out of range 1-65535' },
    { uri: 'k8s:///webhook.policy:HTTPS', names: 'port name "HTTPS" is not a valid IANA service name' },
    { uri: 'k8s:///webhook.policy:a-very-long-port-name', names: 'port name "a-very-long-port-name"' },
    { uri: 'k8s:///webhook.policy:web--ui', names: 'port name "web--ui" is not a valid IANA service name' },
    { uri: 'k8s:///webhook.policy:-http', names: 'port name "-http" is not a valid IANA service name' },
    { uri: 'file:///', names: 'nothing after the scheme' },
    { uri: 'file:///etc/evenlb/', names: 'the path names a directory' },
    { uri: 'file://host/etc/x.json', names: 'an authority "host" is not supported' },
    { uri: 'file:///tmp/bad%zzname.json', names: 'malformed percent-encoding in "/tmp/bad%zzname.json"' },
    { uri: 42, names: 'not a string' },
  ];
  it.each(cases)('$uri → $names', ({ uri, names }) => {
    let error: unknown;
    try {
      parseTarget(uri as string);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(EvenlbError);
    const e = error as EvenlbError;
    expect(e.code).toBe(ErrorCodes.INVALID_TARGET);
    expect(e.message).toContain(names);
    expect(e.message).toContain(`invalid target ${JSON.stringify(String(uri))}`);
    expect(e.message).toMatch(/; expected .+/);
  });
});
