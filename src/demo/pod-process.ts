/**
 * The orchestrator's view of one demo pod: starts `demo/pod.js` on its loopback address, keeps
 * the latest counters the pod reported, and stops it the way Kubernetes stops a pod (drain with
 * a grace period, then kill).
 */
import type { EndpointInput } from '../core/endpoint.js';
import { childScript } from './child-scripts.js';
import { DemoChild, type Spawner } from './demo-child.js';
import { DEMO_MARKER_FLAG, type PodStats } from './protocol.js';

export type PodRole = 'initial' | 'scale-out' | 'replacement';

export interface PodSpec {
  readonly name: string;
  readonly address: string;
  readonly role: PodRole;
  /** Extra pod flags (the recycler's). */
  readonly args?: readonly string[];
  /** The pod's entry: `pod` (one process; evenlb's recycler when asked) or `sidecar-pod` (a plain app behind `evenlb proxy --sidecar`). */
  readonly script?: 'pod' | 'sidecar-pod';
}

/**
 * Time for a pod to start and warm up: one process, or a sidecar pod's two (the sidecar, which
 * loads the proxy, and its app). A bound, not an expectation: on a shared two-core machine at a
 * load average of 18 a one-process pod took longer than 10 s to start and warm up beside four others.
 */
const START_TIMEOUT_MS = { pod: 30_000, 'sidecar-pod': 60_000 } as const;

export class PodProcess {
  readonly name: string;
  readonly address: string;
  readonly role: PodRole;
  readonly child: DemoChild;
  port = 0;
  stats: PodStats = { requests: 0, openConnections: 0, connectionsTotal: 0 };
  /** When the pod last served a request (ms, orchestrator clock), for "idle" checks. */
  lastRequestAtMs = 0;

  private constructor(spec: PodSpec, child: DemoChild) {
    this.name = spec.name;
    this.address = spec.address;
    this.role = spec.role;
    this.child = child;
  }

  /** Spawns the pod and resolves once it listens. */
  static async start(spec: PodSpec, runId: string, spawner: Spawner | undefined, now: () => number) {
    const args = [
      childScript(spec.script ?? 'pod'),
      '--name',
      spec.name,
      '--address',
      spec.address,
      ...(spec.args ?? []),
      DEMO_MARKER_FLAG,
      runId,
    ];
    const child = new DemoChild(spec.name, process.execPath, args, spawner);
    const pod = new PodProcess(spec, child);
    child.on((m) => {
      if (m.type !== 'stats') return;
      const requests = Number(m.requests);
      if (requests !== pod.stats.requests) pod.lastRequestAtMs = now();
      pod.stats = {
        requests,
        openConnections: Number(m.openConnections),
        connectionsTotal: Number(m.connectionsTotal),
      };
    });
    try {
      const listening = await child.next('listening', START_TIMEOUT_MS[spec.script ?? 'pod']);
      pod.port = Number(listening.port);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    pod.lastRequestAtMs = now();
    return pod;
  }

  get key(): string {
    return `${this.address}:${this.port}`;
  }

  endpoint(conditions: { ready: boolean; terminating: boolean }): EndpointInput {
    return {
      address: this.address,
      port: this.port,
      targetRef: { kind: 'Pod', name: this.name, namespace: 'default' },
      conditions: { ready: conditions.ready, serving: true, terminating: conditions.terminating },
    };
  }

  /** Drains (responses carry `Connection: close`), closes what is left after `graceMs`, waits for exit. */
  async stop(graceMs: number): Promise<void> {
    if (this.child.hasExited) return;
    this.child.send({ type: 'stop', graceMs });
    await this.child.waitExit(graceMs + 3000);
  }
}
