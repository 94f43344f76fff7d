/**
 * Counts a tick invocation's subrequests: every Redis REST call and every
 * outbound fetch. Redis calls are counted one per call even when
 * auto-pipelining merges several into one request, so the count never
 * undershoots what Cloudflare counts.
 */
export class SubrequestBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  get spent(): number {
    return this.used;
  }

  get left(): number {
    return this.limit - this.used;
  }

  /** Records `n` subrequests about to be made. */
  spend(n = 1): void {
    this.used += n;
  }

  /** A fetch that records each call; handlers get it for their outbound requests. */
  countingFetch(inner: typeof fetch = fetch): typeof fetch {
    return ((input: RequestInfo | URL, init?: RequestInit) => {
      this.spend();
      return inner(input, init);
    }) as typeof fetch;
  }
}

/** A concurrency limit shared by every topic of one tick. */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.size) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    try {
      return await work();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}
