/**
 * Many deadlines on one timer. A delivery has two (its job's timeout and,
 * once the status is in, how long its body may take), and nearly all of them
 * are cancelled long before they fall due; a timer each was a measurable
 * part of a delivery's CPU in workerd (nodejs_compat's timers wrap each in
 * an object of their own) and counts toward workerd's cap on active timers.
 * Here one timer is armed for the earliest deadline still pending, and a
 * cancelled deadline costs nothing until it would have fallen due.
 *
 * One instance per invocation's piece of work (a dispatched chunk): a timer
 * belongs to the request that set it, and so must what it aborts.
 */
export class Deadlines {
  /** A min-heap by `at`; cancelled entries stay until they surface or the heap is compacted. */
  private heap: Array<{ at: number; fire: () => void; live: boolean }> = [];
  private live = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private armedAt = Infinity;

  constructor(private readonly now: () => number = Date.now) {}

  /** Calls `fire` once `ms` have passed, unless the returned function is called first. */
  add(ms: number, fire: () => void): () => void {
    const entry = { at: this.now() + ms, fire, live: true };
    this.push(entry);
    this.live++;
    if (entry.at < this.armedAt) this.arm(entry.at);
    return () => {
      if (!entry.live) return;
      entry.live = false;
      this.live--;
      if (this.live === 0) this.clear();
      // Cancelled entries are dropped in bulk once they outnumber the live ones.
      else if (this.heap.length > 64 && this.heap.length > 4 * this.live) this.compact();
    };
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedAt = at;
    this.timer = setTimeout(() => this.expire(), Math.max(0, at - this.now()));
  }

  private clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedAt = Infinity;
    this.heap = [];
  }

  private expire(): void {
    this.timer = undefined;
    this.armedAt = Infinity;
    const now = this.now();
    const due: Array<() => void> = [];
    while (this.heap.length > 0 && (!this.heap[0]!.live || this.heap[0]!.at <= now)) {
      const head = this.pop()!;
      if (!head.live) continue;
      head.live = false;
      this.live--;
      due.push(head.fire);
    }
    if (this.heap.length > 0) this.arm(this.heap[0]!.at);
    for (const fire of due) fire();
  }

  private compact(): void {
    const kept = this.heap.filter((e) => e.live);
    this.heap = [];
    for (const e of kept) this.push(e);
  }

  private push(entry: { at: number; fire: () => void; live: boolean }): void {
    const h = this.heap;
    h.push(entry);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.at <= entry.at) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = entry;
  }

  private pop(): { at: number; fire: () => void; live: boolean } | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const child = r < h.length && h[r]!.at < h[l]!.at ? r : l;
      if (h[child]!.at >= last.at) break;
      h[i] = h[child]!;
      i = child;
    }
    h[i] = last;
    return top;
  }
}
