/**
 * The client certificate of a mutual-TLS connection as an `X-Forwarded-Client-Cert` value, in
 * the format Envoy uses (`Hash=<sha256 of the DER>;Subject="<subject>";URI=<uri>;DNS=<name>`),
 * so backends behind the proxy learn who the verified client is. Computed once per connection;
 * a client's own `X-Forwarded-Client-Cert` header is always removed (it could be forged).
 */
import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

function quote(value: string): string {
  return `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/** The header value for a verified client certificate on `socket`; undefined when there is none. */
export function forwardedClientCert(socket: Socket | undefined): string | undefined {
  const tls = socket as TLSSocket | undefined;
  if (tls === undefined || tls.encrypted !== true || tls.authorized !== true) return undefined;
  const cert = tls.getPeerCertificate();
  if (cert === null || cert.raw === undefined) return undefined;
  const parts = [`Hash=${createHash('sha256').update(cert.raw).digest('hex')}`];
  const subject = Object.entries(cert.subject ?? {})
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : v}`)
    .join(',');
  if (subject !== '') parts.push(`Subject=${quote(subject)}`);
  for (const san of (cert.subjectaltname ?? '').split(', ')) {
    if (san.startsWith('URI:')) parts.push(`URI=${san.slice(4)}`);
    else if (san.startsWith('DNS:')) parts.push(`DNS=${san.slice(4)}`);
  }
  return parts.join(';');
}
