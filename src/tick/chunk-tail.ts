/** Options of {@link ChunkTail}. */
export interface ChunkTailOptions {
  /** Jobs the chunk claimed. */
  jobs: number;
  /** Handlers it runs at once: its topic's slots, at most TICK_CONCURRENCY. */
  lanes: number;
  /** How long its claim took: the next claim is taken to take as long. */
  claimMs: number;
  now: () => number;
  /** Called once, at the tail, with how many of its jobs have not started yet. */
  reached: (queued: number) => void;
}

/**
 * Tells when a chunk reaches its tail: every job has started, or its
 * handlers will run out of jobs within three claims' time at the rate they
 * have ended so far (a settle, a poll and a claim must fit before). Before
 * `lanes` jobs have ended the rate is not known, so only the first holds.
 */
export class ChunkTail {
  private startedJobs = 0;
  private endedJobs = 0;
  private firstStartAt = 0;
  private done = false;

  constructor(private readonly o: ChunkTailOptions) {}

  /** Handlers started with `jobs` jobs (a batch's, one otherwise). */
  started(jobs: number): void {
    if (this.startedJobs === 0) this.firstStartAt = this.o.now();
    this.startedJobs += jobs;
    this.check();
  }

  /** A job's handler ended. */
  ended(): void {
    this.endedJobs++;
    this.check();
  }

  private check(): void {
    if (this.done) return;
    const queued = this.o.jobs - this.startedJobs;
    if (queued > 0) {
      if (this.endedJobs < this.o.lanes) return;
      const endedPerMs = this.endedJobs / Math.max(1, this.o.now() - this.firstStartAt);
      if (queued / endedPerMs > 3 * this.o.claimMs) return;
    }
    this.done = true;
    this.o.reached(queued);
  }
}
