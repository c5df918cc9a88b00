/**
 * The CPU a listener's load report states as `cpu_utilization`. A server reporting for itself
 * measures its own process; a proxy fronting an app (a sidecar) must not — its app is another
 * process. So a listener reads the CPU of the cgroup it runs in when that cgroup has a CPU
 * limit (cgroup v2: `usage_usec` of `cpu.stat` over the quota of `cpu.max` — a container's
 * `limits.cpu`), else the host's busy time (`/proc/stat`, every CPU) over its CPUs, else (no
 * Linux files) its own process. Read once per report period by the `LoadReporter`, never per
 * request. In Kubernetes each container has its own cgroup: a sidecar container measures itself
 * this way, not the app's container, so a sidecar states the app's load with `maxInFlight`
 * (`application_utilization`), which policies prefer, and may leave `cpu` off; a proxy sharing
 * its app's container (or cgroup) measures both.
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { cgroupCpuQuota } from '../../server/load/load-reporter.js';

/** Where a listener's CPU figure comes from, and how to read it. */
export interface CpuMeter {
  readonly source: 'cgroup' | 'host' | 'process';
  /** CPUs the usage is measured against (the quota, or the host's CPUs). */
  readonly cores: number;
  /** CPU time used so far, µs (only differences are read). */
  usageMicros(): number;
}

/** `/proc/stat` counts clock ticks: 100 a second on every Linux build Node supports. */
const MICROS_PER_TICK = 10_000;

type Read = (path: string) => string;

const readText: Read = (path) => readFileSync(path, 'utf8');

function tryRead(read: Read, path: string): string | undefined {
  try {
    return read(path);
  } catch {
    return undefined;
  }
}

/** `usage_usec` of a cgroup v2 `cpu.stat` text; NaN when absent. */
function cgroupUsage(text: string | undefined): number {
  const m = text === undefined ? null : /^usage_usec (\d+)$/m.exec(text);
  return m === null ? Number.NaN : Number(m[1]);
}

/** Busy ticks of `/proc/stat`'s first (`cpu`) line: everything but idle and iowait; NaN when absent. */
function hostBusyTicks(text: string | undefined): number {
  const line = text?.split('\n', 1)[0];
  if (line === undefined || !line.startsWith('cpu ')) return Number.NaN;
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 8 || f.some((n) => !Number.isFinite(n))) return Number.NaN;
  const [user, nice, system, , , irq, softirq, steal] = f as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return user + nice + system + irq + softirq + steal;
}

/** `reading`, or its last finite value when a read fails (a failed read is no CPU time, not a reset). */
function lastGood(reading: () => number): () => number {
  let last = 0;
  return () => {
    const v = reading();
    if (Number.isFinite(v)) last = v;
    return last;
  };
}

/**
 * The meter for this machine (see the module comment). `read` and `hostCpus` are for tests.
 *
 * @example
 * const meter = podCpuMeter();
 * new LoadReporter({ cpuUsageMicros: () => meter.usageMicros(), cpuCores: meter.cores });
 */
export function podCpuMeter(read: Read = readText, hostCpus: number = cpus().length): CpuMeter {
  const cores = cgroupCpuQuota(read);
  if (
    cores !== undefined &&
    Number.isFinite(cores) &&
    cores > 0 &&
    Number.isFinite(cgroupUsage(tryRead(read, '/sys/fs/cgroup/cpu.stat')))
  ) {
    return {
      source: 'cgroup',
      cores,
      usageMicros: lastGood(() => cgroupUsage(tryRead(read, '/sys/fs/cgroup/cpu.stat'))),
    };
  }
  if (Number.isFinite(hostBusyTicks(tryRead(read, '/proc/stat'))) && hostCpus > 0) {
    return {
      source: 'host',
      cores: hostCpus,
      usageMicros: lastGood(() => hostBusyTicks(tryRead(read, '/proc/stat')) * MICROS_PER_TICK),
    };
  }
  return {
    source: 'process',
    cores: Math.max(1, hostCpus),
    usageMicros: () => {
      const u = process.cpuUsage();
      return u.user + u.system;
    },
  };
}
