import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseZoneRoutingOptions, ZonePreference } from '../../balancing/shaping/zone-preference.js';
import { EndpointSet } from '../../core/endpoint-set.js';
import { KubeApiClient } from './kube-api-client.js';
import { KubeConnection } from './kube-connection.js';
import { callerZoneHint, lookupNodeZone, ZONE_LABEL } from './node-zone.js';

/** A loopback API server answering GET /api/v1/nodes/NAME for two nodes. */
let server: http.Server;
let connection: KubeConnection;
const seen: (string | undefined)[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.headers.authorization);
    const nodes: Record<string, unknown> = {
      'node-a': { kind: 'Node', metadata: { name: 'node-a', labels: { [ZONE_LABEL]: 'eu-west-1a' } } },
      'node-b': { kind: 'Node', metadata: { name: 'node-b', labels: {} } },
    };
    const name = req.url?.match(/^\/api\/v1\/nodes\/([^/?]+)/)?.[1];
    const node = name === undefined ? undefined : nodes[name];
    res.setHeader('content-type', 'application/json');
    if (node === undefined) {
      res.statusCode = 404;
      res.end(JSON.stringify({ kind: 'Status', status: 'Failure', code: 404, message: `nodes "${name}" not found` }));
      return;
    }
    res.end(JSON.stringify(node));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  connection = new KubeConnection({ type: 'explicit', server: `http://127.0.0.1:${port}`, token: 'sa-token' });
});

afterAll(async () => {
  await connection.close();
  await new Promise((resolve) => server.close(resolve));
});

describe('caller zone from the node label', () => {
  it('prefers EVENLB_ZONE, else names the node to look up', () => {
    expect(callerZoneHint({ EVENLB_ZONE: 'z1', NODE_NAME: 'n' })).toEqual({ zone: 'z1' });
    expect(callerZoneHint({ NODE_NAME: 'node-a' })).toEqual({ nodeName: 'node-a' });
    expect(callerZoneHint({})).toEqual({});
  });

  it('reads topology.kubernetes.io/zone of the node, with the credentials', async () => {
    const client = new KubeApiClient(connection);
    expect(await lookupNodeZone(client, 'node-a', AbortSignal.timeout(5000))).toBe('eu-west-1a');
    expect(await lookupNodeZone(client, 'node-b', AbortSignal.timeout(5000))).toBeUndefined();
    await expect(lookupNodeZone(client, 'node-x', AbortSignal.timeout(5000))).rejects.toThrow(
      /cannot read node node-x .*not found/,
    );
    expect(seen[0]).toBe('Bearer sa-token');
  });

  it('zone routing uses the zone discovery learnt when none is configured', () => {
    const z = new ZonePreference(parseZoneRoutingOptions({ mode: 'on' }));
    const set = EndpointSet.from(
      [
        { address: '10.0.0.1', port: 80, zone: 'eu-west-1a' },
        { address: '10.0.0.2', port: 80, zone: 'eu-west-1b' },
      ],
      { callerZone: 'eu-west-1a' },
    );
    z.update(set, set.eligible());
    expect(z.active).toBe(true);
    expect(z.isLocal('10.0.0.1:80')).toBe(true);
    expect(z.state().zone).toBe('eu-west-1a');
  });
});
