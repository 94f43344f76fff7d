/** What the tick reads and writes through the queue: its status, its sleep mark, a cron's look and its poll. */

/** What the running (or last) tick loop reports about itself. */
export interface TickStatus {
  /** The invocation's scheduled time (its minute), epoch ms. */
  startedAt: number;
  /** When this status was written, epoch ms. */
  updatedAt: number;
  rounds: number;
  claimed: number;
  subrequests: number;
  budget: number;
  /** Whether the loop looks only every TICK_IDLE_PEEK_MS. */
  asleep: boolean;
  /** Why the loop ended; null while it runs. */
  ended: string | null;
}

/**
 * The tick's sleep mark (src/tick/sleep-mark.ts): "1" a loop sleeps and looks every TICK_IDLE_PEEK_MS; "c" no loop
 * runs and the next cron looks; null the tick is awake (or has not said).
 */
export type TickSleep = "1" | "c" | null;

/** What a cron invocation's look (Queue.look) found. */
export interface TickLook {
  /** A loop holds the tick lock. */
  lockHeld: boolean;
  sleepMark: TickSleep;
  /** The topic index's earliest score (a job, a retry, a lease's end, a schedule), or null when it is empty. */
  earliestAt: number | null;
}

/** Options of {@link Queue.peek}, the tick's poll. */
export interface PeekOptions {
  now: number;
  /** Most due topics to return. */
  limit: number;
  renewLock?: { token: string; ttlMs: number };
  /** Set the sleep mark to "1" for this many ms, to "c" (no loop runs till the next cron), or clear it ("clear"); leave it when unset. */
  sleepMark?: number | "c" | "clear";
  /** Record the tick's status. */
  status?: TickStatus;
  /** Sample these topics' backlogs into the per-minute series for the minute holding `at` (epoch ms). */
  sample?: { at: number; topics: string[] };
  /** List what to sample next: the first this-many topics of the index and every parked (pull or paused) topic. */
  listToSample?: number;
}

/** What the tick's poll found. */
export interface PeekResult {
  lockHeld: boolean;
  due: Array<{ topic: string; at: number }>;
  /** A schedule's next occurrence has come (see Schedules.fire). */
  schedulesDue: boolean;
  more: boolean;
  nextAt: number | null;
  toSample: string[];
}
