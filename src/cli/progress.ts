/**
 * The progress of a download on a terminal (`snapshot save`): one line, redrawn in place at
 * most every REDRAW_MS, with a moving bar, the bytes received and the rate; the last drawing
 * ends the line. Where the output is not a terminal nothing is drawn, so scripts and logs
 * see only the command's own output.
 */

const REDRAW_MS = 100;
const BAR = 20;
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 1536 → "1.5 KiB". */
export function formatBytes(n: number): string {
  let v = n;
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${UNITS[i]}`;
}

/**
 * The line for `bytes` received in `elapsedMs`: an indeterminate bar (the size is not known
 * in advance; a block moves one cell per `tick`), then the figures. `done` fills the bar.
 */
export function progressLine(bytes: number, elapsedMs: number, tick: number, done = false): string {
  const seconds = Math.max(elapsedMs, 1) / 1000;
  const rate = `${formatBytes(Math.round(bytes / seconds))}/s`;
  let bar: string;
  if (done) bar = '='.repeat(BAR);
  else {
    const at = tick % BAR;
    bar = `${' '.repeat(at)}<=>${' '.repeat(BAR)}`.slice(0, BAR);
  }
  return `[${bar}] ${formatBytes(bytes)} received, ${rate}, ${seconds.toFixed(1)} s`;
}

export interface ProgressOptions {
  /** Where to draw (stderr). */
  write: (s: string) => void;
  /** Whether that is a terminal: without one nothing is drawn. */
  tty: boolean;
  now?: () => number;
}

export class Progress {
  private readonly started: number;
  private lastDraw = Number.NEGATIVE_INFINITY;
  private ticks = 0;
  private bytes = 0;
  private readonly now: () => number;

  constructor(private readonly o: ProgressOptions) {
    this.now = o.now ?? Date.now;
    this.started = this.now();
  }

  /** `total` bytes received so far. */
  update(total: number): void {
    this.bytes = total;
    if (!this.o.tty) return;
    const now = this.now();
    if (now - this.lastDraw < REDRAW_MS) return;
    this.lastDraw = now;
    this.o.write(`\r${progressLine(total, now - this.started, this.ticks++)}\x1b[K`);
  }

  /** The transfer ended (`ok`: completely): the final figures, and the line is ended. */
  finish(ok: boolean): void {
    if (!this.o.tty) return;
    const line = progressLine(this.bytes, this.now() - this.started, this.ticks, ok);
    this.o.write(`\r${line}\x1b[K\n`);
  }
}
