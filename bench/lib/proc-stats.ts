/**
 * CPU and memory of a process (by PID) and of the whole machine, from Linux's /proc, so that a
 * benchmark can report a server's cost whatever it is written in (a Node member or Go etcd).
 * On a system without /proc every reading is null and the report says "n/a".
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let clockTicks: number | undefined;

/** Clock ticks per second of /proc's CPU times (USER_HZ, almost always 100). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU seconds a process has used (all its threads), or null if it is gone. */
export function processCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / ticksPerSecond();
  } catch {
    return null;
  }
}

/** Resident and peak resident memory in MiB, or null if the process is gone. */
export function processMemoryMiB(pid: number): { rss: number; peak: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

/** Busy and total CPU time of the machine (all cores), in ticks. */
export function machineCpuTicks(): { busy: number; total: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

/**
 * Samples a process and the machine over a window: CPU as a share of one core, peak RSS, and
 * the machine's busy share of all cores. `sample()` on a timer keeps the peak honest for
 * processes whose VmHWM is reset or unavailable.
 */
export class ProcessSampler {
  private cpu0: number | null;
  private machine0: { busy: number; total: number } | null;
  private readonly t0 = performance.now();
  private peakRss = 0;
  private lastRss = 0;

  constructor(private readonly pid: number) {
    this.cpu0 = processCpuSeconds(pid);
    this.machine0 = machineCpuTicks();
    this.sample();
  }

  sample(): void {
    const m = processMemoryMiB(this.pid);
    if (m === null) return;
    this.lastRss = m.rss;
    this.peakRss = Math.max(this.peakRss, m.rss, m.peak);
  }

  /** The window so far: CPU seconds and % of one core, RSS now and at peak, machine busy %. */
  read(): {
    cpuSeconds: number | null;
    cpuPct: number | null;
    rssMiB: number;
    peakRssMiB: number;
    machineBusyPct: number | null;
  } {
    this.sample();
    const seconds = (performance.now() - this.t0) / 1000;
    const cpu = processCpuSeconds(this.pid);
    const m = machineCpuTicks();
    const cpuSeconds = cpu === null || this.cpu0 === null ? null : cpu - this.cpu0;
    const cpuPct = cpuSeconds === null ? null : (100 * cpuSeconds) / seconds;
    const machineBusyPct =
      m === null || this.machine0 === null || m.total === this.machine0.total
        ? null
        : (100 * (m.busy - this.machine0.busy)) / (m.total - this.machine0.total);
    return { cpuSeconds, cpuPct, rssMiB: this.lastRss, peakRssMiB: this.peakRss, machineBusyPct };
  }
}
