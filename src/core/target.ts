/**
 * Target URIs in gRPC's naming style: where a route's endpoints come from.
 *
 * - `static:///10.0.0.1:80,10.0.0.2:80` (IPv6 as `[::1]:80`)
 * - `dns:///host.example:443` (A/AAAA records, re-resolved)
 * - `k8s:///name.namespace:443` (Service port number) or `k8s:///name.namespace:https` (port name)
 * - `file:///abs/path/endpoints.json` (a watched JSON array of endpoints)
 *
 * `parseTarget` rejects every malformed input with an error naming the bad part and the form
 * it expected.
 */
import { isIP } from 'node:net';
import { ErrorCodes, EvenlbError } from './errors.js';

export type Target =
  | {
      readonly scheme: 'static';
      readonly uri: string;
      readonly endpoints: readonly { address: string; port: number }[];
    }
  | { readonly scheme: 'dns'; readonly uri: string; readonly host: string; readonly port: number }
  | {
      readonly scheme: 'k8s';
      readonly uri: string;
      readonly name: string;
      readonly namespace: string;
      /** A Service port number, or a port name (`""` never: use the number for unnamed ports). */
      readonly port: number | string;
    }
  | { readonly scheme: 'file'; readonly uri: string; readonly path: string };

export type TargetScheme = Target['scheme'];

const FORMS: Record<TargetScheme, string> = {
  static: 'static:///IP:PORT[,IP:PORT...] (IPv6 as [::1]:PORT)',
  dns: 'dns:///HOST:PORT',
  k8s: 'k8s:///NAME.NAMESPACE:PORT or k8s:///NAME.NAMESPACE:PORT_NAME',
  file: 'file:///ABSOLUTE/PATH.json',
};

function fail(uri: string, part: string, expected: string): never {
  throw new EvenlbError(
    ErrorCodes.INVALID_TARGET,
    `invalid target ${JSON.stringify(uri)}: ${part}; expected ${expected}`,
    { details: { target: uri, expected } },
  );
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const HOST_LABEL = /^[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9])?$/;
/** IANA service name as Kubernetes validates it: lowercase alphanumerics and single hyphens, <= 15. */
const PORT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function parsePortNumber(uri: string, text: string, form: string): number {
  if (!/^[0-9]{1,5}$/.test(text)) fail(uri, `port ${JSON.stringify(text)} is not a number`, form);
  const port = Number(text);
  if (port < 1 || port > 65535) fail(uri, `port ${port} is out of range 1-65535`, form);
  return port;
}

/** Splits `host:port` or `[v6]:port`; the host part is returned without brackets. */
function splitHostPort(uri: string, text: string, form: string): { host: string; portText: string } {
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0) fail(uri, `unclosed "[" in ${JSON.stringify(text)}`, form);
    const host = text.slice(1, end);
    if (text[end + 1] !== ':') fail(uri, `missing ":PORT" after ${JSON.stringify(text.slice(0, end + 1))}`, form);
    return { host, portText: text.slice(end + 2) };
  }
  const colon = text.lastIndexOf(':');
  if (colon < 0) fail(uri, `missing ":PORT" in ${JSON.stringify(text)}`, form);
  const host = text.slice(0, colon);
  if (host.includes(':')) fail(uri, `IPv6 address ${JSON.stringify(host)} must be in brackets`, form);
  return { host, portText: text.slice(colon + 1) };
}

function validHostName(host: string): boolean {
  if (host.length === 0 || host.length > 253) return false;
  return host
    .replace(/\.$/, '')
    .split('.')
    .every((label) => HOST_LABEL.test(label));
}

/**
 * Parses a target URI.
 *
 * @example
 * parseTarget('k8s:///webhook.policy:https')
 * // → { scheme: 'k8s', name: 'webhook', namespace: 'policy', port: 'https', uri: ... }
 */
export function parseTarget(uri: string): Target {
  if (typeof uri !== 'string') fail(String(uri), 'not a string', 'a target URI such as static:///10.0.0.1:80');
  const match = /^([a-z0-9]+):\/\/([^/]*)\/(.*)$/.exec(uri);
  if (match === null) {
    fail(uri, 'not of the form SCHEME:///PATH', `one of ${Object.values(FORMS).join(' | ')}`);
  }
  const [, scheme = '', authority = '', rest = ''] = match;
  if (!(scheme in FORMS)) {
    fail(
      uri,
      `unknown scheme ${JSON.stringify(scheme)}`,
      `one of ${Object.keys(FORMS)
        .map((s) => `${s}:///`)
        .join(', ')}`,
    );
  }
  const s = scheme as TargetScheme;
  const form = FORMS[s];
  if (authority !== '')
    fail(uri, `an authority ${JSON.stringify(authority)} is not supported (use three slashes)`, form);
  if (rest === '') fail(uri, 'nothing after the scheme', form);

  switch (s) {
    case 'static': {
      const endpoints = rest.split(',').map((part) => {
        const item = part.trim();
        if (item === '') fail(uri, 'an empty entry in the endpoint list', form);
        const { host, portText } = splitHostPort(uri, item, form);
        if (isIP(host) === 0) fail(uri, `${JSON.stringify(host)} is not an IP address`, form);
        return { address: host, port: parsePortNumber(uri, portText, form) };
      });
      return Object.freeze({ scheme: s, uri, endpoints: Object.freeze(endpoints) });
    }
    case 'dns': {
      const { host, portText } = splitHostPort(uri, rest, form);
      if (isIP(host) === 0 && !validHostName(host)) fail(uri, `${JSON.stringify(host)} is not a valid host name`, form);
      return Object.freeze({ scheme: s, uri, host, port: parsePortNumber(uri, portText, form) });
    }
    case 'k8s': {
      const colon = rest.lastIndexOf(':');
      if (colon < 0) fail(uri, `missing ":PORT" or ":PORT_NAME" in ${JSON.stringify(rest)}`, form);
      const service = rest.slice(0, colon);
      const portText = rest.slice(colon + 1);
      const parts = service.split('.');
      if (parts.length !== 2) fail(uri, `${JSON.stringify(service)} is not NAME.NAMESPACE`, form);
      const [name = '', namespace = ''] = parts;
      if (!DNS_LABEL.test(name)) fail(uri, `Service name ${JSON.stringify(name)} is not a DNS label`, form);
      if (!DNS_LABEL.test(namespace)) fail(uri, `namespace ${JSON.stringify(namespace)} is not a DNS label`, form);
      if (portText === '') fail(uri, 'empty port', form);
      let port: number | string;
      if (/^[0-9]+$/.test(portText)) port = parsePortNumber(uri, portText, form);
      else if (portText.length <= 15 && PORT_NAME.test(portText) && !portText.includes('--')) port = portText;
      else fail(uri, `port name ${JSON.stringify(portText)} is not a valid IANA service name`, form);
      return Object.freeze({ scheme: s, uri, name, namespace, port });
    }
    case 'file': {
      const path = `/${rest}`;
      if (path.endsWith('/')) fail(uri, 'the path names a directory', form);
      let decoded: string;
      try {
        decoded = decodeURIComponent(path);
      } catch {
        fail(uri, `malformed percent-encoding in ${JSON.stringify(path)}`, form);
      }
      return Object.freeze({ scheme: s, uri, path: decoded });
    }
  }
}
