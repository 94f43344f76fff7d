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

/** Who takes a slot of a semaphore shared between topics: the topic (its slots are counted together) and its weight. */
export interface Claimant {
  topic: string;
  weight: number;
}

/**
 * A concurrency limit: the tick's overall one (shared by every topic of an
 * invocation) and a topic's handler slots. Taking a free slot is synchronous
 * (no promise: a chunk's lanes take one per job); a slot given back goes
 * straight to a waiter, so nobody taking one synchronously can overtake it:
 * the longest waiter, unless waiters of different weights wait (see
 * {@link nextWaiter}).
 */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<{ grant: () => void; who: Claimant | undefined }> = [];
  /** Slots each claimant's topic holds. */
  private readonly held = new Map<string, number>();

  constructor(readonly size: number) {}

  /** Nothing holds or waits for a slot. */
  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }

  /** Takes a slot for `who`: at once (undefined) when one is free, else the promise of one. Give it back with {@link release}. */
  acquire(who?: Claimant): Promise<void> | undefined {
    if (this.active < this.size) {
      this.active++;
      this.count(who, 1);
      return undefined;
    }
    return new Promise<void>((grant) => this.waiting.push({ grant, who }));
  }

  /** Gives back a slot `who` took with {@link acquire}: to the next waiter, else free. */
  release(who?: Claimant): void {
    this.count(who, -1);
    const i = this.nextWaiter();
    if (i < 0) {
      this.active--;
      return;
    }
    const [next] = this.waiting.splice(i, 1);
    this.count(next!.who, 1);
    next!.grant();
  }

  async run<T>(work: () => Promise<T>, who?: Claimant): Promise<T> {
    const wait = this.acquire(who);
    if (wait) await wait;
    try {
      return await work();
    } finally {
      this.release(who);
    }
  }

  /**
   * Which waiter a freed slot goes to (-1: none waits). Waiters of one
   * weight are served in turn, the longest first. When weights differ, the
   * slot goes where it leaves its topic's slots, over its weight, lowest (the
   * longest waiter among equals): held slots go 3:1 between topics of
   * weights 3 and 1 while both wait, within what each can run.
   */
  private nextWaiter(): number {
    if (this.waiting.length === 0) return -1;
    const weightOf = (i: number) => this.waiting[i]!.who?.weight ?? 1;
    if (this.waiting.every((_, i) => weightOf(i) === weightOf(0))) return 0;
    let best = 0;
    let lowest = Infinity;
    for (let i = 0; i < this.waiting.length; i++) {
      const who = this.waiting[i]!.who;
      const after = ((who ? (this.held.get(who.topic) ?? 0) : 0) + 1) / weightOf(i);
      if (after < lowest) {
        lowest = after;
        best = i;
      }
    }
    return best;
  }

  private count(who: Claimant | undefined, n: number): void {
    if (!who) return;
    const held = (this.held.get(who.topic) ?? 0) + n;
    if (held > 0) this.held.set(who.topic, held);
    else this.held.delete(who.topic);
  }
}
