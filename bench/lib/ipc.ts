/**
 * A forked worker process with typed messages and bounded waits: `next(type, ms)` resolves with
 * the next message of that type, and rejects when the worker reports an error, exits, or the
 * time runs out, so no phase of a benchmark can hang.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { track } from './children.js';

type Tagged = { type: string };

export class Worker<In, Out extends Tagged> {
  private readonly child: ChildProcess;
  private readonly waiting = new Set<{
    type: string;
    resolve(m: Out): void;
    reject(e: Error): void;
  }>();
  private readonly listeners: ((m: Out) => void)[] = [];
  private failure: Error | undefined;

  constructor(
    readonly label: string,
    script: string,
  ) {
    this.child = track(
      fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] }),
    );
    this.child.on('message', (m: Out) => this.receive(m));
    this.child.on('exit', (code, signal) =>
      this.fail(new Error(`${label} exited (${code ?? signal})`)),
    );
    this.child.on('error', (e) => this.fail(e));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get process(): ChildProcess {
    return this.child;
  }

  send(m: In): void {
    if (this.child.connected) this.child.send(m as object);
  }

  /** Every message, as it arrives (progress reports). */
  onMessage(listener: (m: Out) => void): void {
    this.listeners.push(listener);
  }

  next<K extends Out['type']>(type: K, timeoutMs: number): Promise<Extract<Out, { type: K }>> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const entry = {
        type,
        resolve: (m: Out) => {
          clearTimeout(timer);
          resolve(m as Extract<Out, { type: K }>);
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(() => {
        this.waiting.delete(entry);
        reject(new Error(`${this.label}: no '${type}' within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      this.waiting.add(entry);
    });
  }

  private receive(m: Out): void {
    for (const l of this.listeners) l(m);
    if (m.type === 'error') {
      this.fail(new Error((m as unknown as { message: string }).message));
      return;
    }
    for (const w of this.waiting) {
      if (w.type !== m.type) continue;
      this.waiting.delete(w);
      w.resolve(m);
    }
  }

  private fail(e: Error): void {
    this.failure ??= e;
    for (const w of this.waiting) w.reject(this.failure);
    this.waiting.clear();
  }
}
