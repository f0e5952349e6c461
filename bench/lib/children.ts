/**
 * Every process a benchmark starts, by PID, so that all of them end with it: on a normal finish,
 * on an error, on Ctrl-C, and (with SIGKILL, synchronously) when the parent exits for any
 * other reason. Only PIDs this process spawned are ever signalled.
 */
import type { ChildProcess } from 'node:child_process';

const live = new Map<number, ChildProcess>();
let installed = false;

/** Remembers `child` until it exits. */
export function track(child: ChildProcess): ChildProcess {
  installHooks();
  const pid = child.pid;
  if (pid === undefined) return child;
  live.set(pid, child);
  child.once('exit', () => live.delete(pid));
  return child;
}

/** Whether a process has not exited yet. */
export function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/**
 * Asks `child` to stop with `signal`, then SIGKILLs it if it has not exited within `graceMs`.
 * Resolves once it is gone.
 */
export function stopChild(
  child: ChildProcess,
  graceMs = 10_000,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (!running(child) || child.pid === undefined) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      if (running(child)) child.kill('SIGKILL');
    }, graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** SIGKILLs every tracked process still running (synchronous; safe in an 'exit' handler). */
export function killAllNow(): void {
  for (const child of live.values()) if (running(child)) child.kill('SIGKILL');
  live.clear();
}

/** Stops every tracked process gracefully, in parallel. */
export async function stopAll(graceMs = 10_000): Promise<void> {
  await Promise.all([...live.values()].map((c) => stopChild(c, graceMs)));
}

function installHooks(): void {
  if (installed) return;
  installed = true;
  process.once('exit', killAllNow);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAllNow();
      process.exit(130);
    });
  }
}
