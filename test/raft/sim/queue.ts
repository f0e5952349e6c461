/**
 * The simulator's event queue: a binary min-heap ordered by (time, insertion sequence), so
 * events at the same virtual millisecond run in the order they were scheduled. That order
 * is what makes a seed replay exactly.
 */
interface Event {
  readonly time: number;
  readonly seq: number;
  readonly run: () => void;
}

export class EventQueue {
  private heap: Event[] = [];
  private seq = 0;
  now = 0;

  at(time: number, run: () => void): void {
    this.push({ time: Math.max(time, this.now), seq: this.seq++, run });
  }

  after(delayMs: number, run: () => void): void {
    this.at(this.now + delayMs, run);
  }

  get size(): number {
    return this.heap.length;
  }

  /** Run events until the queue is empty or the next one is later than `until`. */
  runUntil(until: number): void {
    while (this.heap.length > 0 && this.heap[0]!.time <= until) {
      const e = this.pop();
      this.now = e.time;
      e.run();
    }
    this.now = Math.max(this.now, until);
  }

  private less(a: Event, b: Event): boolean {
    return a.time < b.time || (a.time === b.time && a.seq < b.seq);
  }

  private push(e: Event): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  private pop(): Event {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}
