/**
 * CPU and memory of a process (by PID) and of the whole machine, from Linux's /proc, so that a
 * benchmark can report a server's cost whatever it is written in (a Node member or Go etcd).
 * On a system without /proc every reading is null and the report says "n/a".
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

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

/** The PIDs of a process's live children (a member's --workers), from /proc. */
export function childPids(pid: number): number[] {
  try {
    const out: number[] = [];
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text !== '') out.push(...text.split(/\s+/).map(Number));
    }
    return out;
  } catch {
    return [];
  }
}

/**
 * CPU seconds of a process and its live children together (a member and its worker
 * processes), or null if the process is gone. A child that exits during the window takes its
 * seconds with it, so this undercounts restarts.
 */
export function treeCpuSeconds(pid: number): number | null {
  const own = processCpuSeconds(pid);
  if (own === null) return null;
  return childPids(pid).reduce((sum, c) => sum + (processCpuSeconds(c) ?? 0), own);
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
 * Samples a process (with its live children: a member's --workers) and the machine over a
 * window: CPU as a share of one core, peak RSS (summed over the processes), and the
 * machine's busy share of all cores. `sample()` on a timer keeps the peak honest for
 * processes whose VmHWM is reset or unavailable.
 */
export class ProcessSampler {
  private cpu0: number | null;
  private machine0: { busy: number; total: number } | null;
  private readonly t0 = performance.now();
  private peakRss = 0;
  private lastRss = 0;

  constructor(private readonly pid: number) {
    this.cpu0 = treeCpuSeconds(pid);
    this.machine0 = machineCpuTicks();
    this.sample();
  }

  sample(): void {
    const m = processMemoryMiB(this.pid);
    if (m === null) return;
    const children = childPids(this.pid).map((c) => processMemoryMiB(c));
    const rss = children.reduce((sum, c) => sum + (c?.rss ?? 0), m.rss);
    const peak = children.reduce((sum, c) => sum + (c?.peak ?? 0), m.peak);
    this.lastRss = rss;
    this.peakRss = Math.max(this.peakRss, rss, peak);
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
    const cpu = treeCpuSeconds(this.pid);
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
