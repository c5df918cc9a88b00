import { describe, expect, it } from 'vitest';
import { podCpuMeter } from './pod-cpu.js';

/** A file system of `files`, read as the meter reads it (missing files throw ENOENT). */
function fs(files: Record<string, string>): (path: string) => string {
  return (path) => {
    const text = files[path];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return text;
  };
}

describe('podCpuMeter', () => {
  it('a cgroup with a CPU limit: usage_usec over the quota', () => {
    const files = {
      '/sys/fs/cgroup/cpu.max': '150000 100000\n',
      '/sys/fs/cgroup/cpu.stat': 'usage_usec 5000\nuser_usec 1\n',
    };
    const meter = podCpuMeter(fs(files), 8);
    expect(meter.source).toBe('cgroup');
    expect(meter.cores).toBe(1.5);
    expect(meter.usageMicros()).toBe(5000);
    files['/sys/fs/cgroup/cpu.stat'] = 'usage_usec 9000\n';
    expect(meter.usageMicros()).toBe(9000);
  });

  it('no limit: the host busy time of /proc/stat (ticks of 10 ms) over its CPUs', () => {
    const files: Record<string, string> = {
      '/sys/fs/cgroup/cpu.max': 'max 100000\n',
      '/sys/fs/cgroup/cpu.stat': 'usage_usec 5000\n',
      '/proc/stat': 'cpu  10 1 4 500 7 2 3 1 0 0\ncpu0 5 0 2 250 3 1 1 0 0 0\n',
    };
    const meter = podCpuMeter(fs(files), 4);
    expect(meter.source).toBe('host');
    expect(meter.cores).toBe(4);
    // user + nice + system + irq + softirq + steal = 21 ticks
    expect(meter.usageMicros()).toBe(210_000);
  });

  it('a failed read keeps the last figure (no reset to 0); no Linux files: the process', () => {
    const files: Record<string, string> = { '/proc/stat': 'cpu  10 0 0 0 0 0 0 0\n' };
    const meter = podCpuMeter(fs(files), 2);
    expect(meter.usageMicros()).toBe(100_000);
    delete files['/proc/stat'];
    expect(meter.usageMicros()).toBe(100_000);
    expect(podCpuMeter(fs({}), 2).source).toBe('process');
  });
});
