import { describe, expect, it } from 'vitest';
import { DeploymentController } from './deployment-controller.js';
import { SimPod } from './sim-pod.js';

/** Drives a controller: pods become ready / go away one at a time, oldest event first. */
function harness(replicas: number) {
  const pods: SimPod[] = [];
  const log: string[] = [];
  let settled = 0;
  const make = (revision: number) => {
    const pod = new SimPod({
      index: pods.length,
      name: `r${revision}-${pods.length}`,
      addressU32: 0x0a400000 + pods.length,
      port: 80,
      revision,
      speed: 1,
      workers: 1,
      createdAtMs: pods.length,
      initial: false,
    });
    pods.push(pod);
    return pod;
  };
  for (let i = 0; i < replicas; i++) make(1).state = 'ready';
  const controller = new DeploymentController(replicas, 1, {
    pods,
    createPod: (revision) => {
      log.push(`+${revision}`);
      return make(revision);
    },
    terminate: (pod) => {
      log.push(`-${pod.revision}`);
      pod.state = 'terminating';
    },
    settled: () => settled++,
  });
  const live = () => pods.filter((p) => p.state === 'starting' || p.state === 'ready');
  const ready = () => pods.filter((p) => p.state === 'ready').length;
  /** Lets one pending pod event happen: a starting pod gets ready, else a terminating one goes. */
  const step = (): boolean => {
    const starting = pods.find((p) => p.state === 'starting');
    if (starting !== undefined) {
      starting.state = 'ready';
      controller.podReady(starting);
      return true;
    }
    const leaving = pods.find((p) => p.state === 'terminating');
    if (leaving !== undefined) {
      leaving.state = 'gone';
      controller.podGone(leaving);
      return true;
    }
    return false;
  };
  return { controller, pods, log, live, ready, step, settledCount: () => settled };
}

describe('DeploymentController rolling update', () => {
  const cases = [
    { replicas: 4, maxSurge: 1, maxUnavailable: 0, surge: 1, unavailable: 0, first: ['+2'] },
    { replicas: 4, maxSurge: 0, maxUnavailable: 1, surge: 0, unavailable: 1, first: ['-1', '+2'] },
    {
      replicas: 10,
      maxSurge: '25%',
      maxUnavailable: '25%',
      surge: 3,
      unavailable: 2,
      first: ['+2', '+2', '+2', '-1', '+2', '-1', '+2'],
    },
    { replicas: 3, maxSurge: '0%', maxUnavailable: '10%', surge: 0, unavailable: 1, first: ['-1', '+2'] },
  ] as const;
  for (const c of cases) {
    it(`replicas ${c.replicas}, maxSurge ${c.maxSurge}, maxUnavailable ${c.maxUnavailable}: stays within bounds and settles once`, () => {
      const h = harness(c.replicas);
      h.controller.rollingUpdate(c.maxSurge, c.maxUnavailable);
      expect(h.log).toEqual(c.first);
      let guard = 0;
      do {
        expect(h.live().length).toBeLessThanOrEqual(c.replicas + c.surge);
        expect(h.ready()).toBeGreaterThanOrEqual(c.replicas - c.unavailable);
        expect(++guard).toBeLessThan(1000);
      } while (h.step());
      expect(h.controller.changing).toBe(false);
      expect(h.settledCount()).toBe(1);
      expect(h.live().map((p) => `${p.revision}:${p.state}`)).toEqual(Array(c.replicas).fill('2:ready'));
    });
  }

  it('scale-down removes unready pods first, then the newest', () => {
    const h = harness(3);
    const c2 = new DeploymentController(3, 2, {
      pods: h.pods,
      createPod: () => {
        throw new Error('no');
      },
      terminate: (pod) => {
        pod.state = 'terminating';
      },
      settled: () => {},
    });
    (h.pods[1] as SimPod).state = 'starting';
    c2.scale(1);
    expect(h.pods.map((p) => p.state)).toEqual(['ready', 'terminating', 'terminating']);
    expect(c2.changing).toBe(true);
  });
});
