/**
 * Counts a tick invocation's subrequests: every Redis REST call and every
 * outbound fetch. Redis calls are counted one per call even when
 * auto-pipelining merges several into one request, so the count never
 * undershoots what Cloudflare counts.
 *
 * Chunks run side by side (a round does not wait for the last one's
 * handlers), so each takes a reservation ({@link reserve}): a budget of its
 * own whose spending counts here, and whose unspent rest is not `left` for
 * anyone else until it is given back.
 */
export class SubrequestBudget {
  private used = 0;
  private cap: number;
  private readonly reservations = new Set<SubrequestBudget>();

  constructor(
    limit: number,
    private readonly parent?: SubrequestBudget,
  ) {
    this.cap = limit;
  }

  get limit(): number {
    return this.cap;
  }

  get spent(): number {
    return this.used;
  }

  /** What is neither spent nor set aside for a reservation still open. */
  get left(): number {
    let held = 0;
    for (const r of this.reservations) held += Math.max(0, r.cap - r.used);
    return this.cap - this.used - held;
  }

  /** Records `n` subrequests about to be made. */
  spend(n = 1): void {
    this.used += n;
    this.parent?.spend(n);
  }

  /** Sets up to `n` of what is left aside for one chunk: spend it through the budget returned, then {@link release} it. */
  reserve(n: number): SubrequestBudget {
    const r = new SubrequestBudget(Math.max(0, Math.min(n, this.left)), this);
    this.reservations.add(r);
    return r;
  }

  /** Of this reservation, keeps only `n` more than already spent; the rest goes back. */
  keep(n: number): void {
    this.cap = Math.min(this.cap, this.used + Math.max(0, n));
  }

  /** Gives back what this reservation did not spend. (Spending past a reservation still counts, upward.) */
  release(): void {
    this.cap = this.used;
    this.parent?.reservations.delete(this);
  }

  /** A fetch that records each call; handlers get it for their outbound requests. */
  countingFetch(inner: typeof fetch = fetch): typeof fetch {
    return ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      this.spend();
      return inner(input, init);
    }) as typeof fetch;
  }
}

/**
 * A concurrency limit: the tick's overall one (shared by every topic of an
 * invocation) and a topic's handler slots. Taking a free slot is synchronous
 * (no promise: a chunk's lanes take one per job); a slot given back goes
 * straight to the longest waiter, so nobody taking one synchronously can
 * overtake it.
 */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {}

  /** Nothing holds or waits for a slot. */
  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }

  /** Takes a slot: at once (undefined) when one is free, else the promise of one. Give it back with {@link release}. */
  acquire(): Promise<void> | undefined {
    if (this.active < this.size) {
      this.active++;
      return undefined;
    }
    return new Promise<void>((r) => this.waiting.push(r));
  }

  /** Gives back a slot taken with {@link acquire}: to the longest waiter, else free. */
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    const wait = this.acquire();
    if (wait) await wait;
    try {
      return await work();
    } finally {
      this.release();
    }
  }
}
