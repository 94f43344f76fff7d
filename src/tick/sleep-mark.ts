import { SLEEP_MARK_STALENESS_MS } from "./wake.js";

/** A change to the sleep mark that a poll carries: set it for this many ms, or clear it. */
export type MarkChange = number | "clear";

/**
 * The loop's idle state. After a few empty rounds with nothing due within
 * TICK_IDLE_PEEK_MS the loop marks itself asleep (producers then start jobs
 * due sooner themselves, src/tick/wake.ts), keeps polling until every
 * producer has seen the mark, and from then on looks only every
 * TICK_IDLE_PEEK_MS, renewing the mark with each look. Work, or anything due
 * sooner, clears it. Each change rides on the loop's next poll.
 */
export class SleepMark {
  private idleRounds = 0;
  private markedAt: number | null = null;
  // The first poll clears a mark a previous invocation left behind.
  private change: MarkChange | undefined = "clear";
  private readonly ttl: number;

  constructor(private readonly s: { tickIdlePeekMs: number; tickPollMs: number }) {
    this.ttl = 3 * s.tickIdlePeekMs;
  }

  /** The change the next poll carries, if any. */
  get pending(): MarkChange | undefined {
    return this.change;
  }

  /** Whether the loop counts as asleep once the pending change is made (for the status it writes). */
  get asleep(): boolean {
    return this.change === undefined ? this.markedAt !== null : this.change !== "clear";
  }

  /** The poll carrying the pending change succeeded at `now`. */
  polled(now: number): void {
    if (typeof this.change === "number" && this.markedAt === null) this.markedAt = now;
    if (this.change === "clear") this.markedAt = null;
    this.change = undefined;
  }

  /** A round started work. */
  worked(): void {
    this.idleRounds = 0;
    if (this.markedAt !== null) this.change = "clear";
  }

  /**
   * A round with nothing to start and nothing running, whose next known work
   * is at `wakeAt`. Returns how long the loop may sleep before its next look
   * once it sleeps (every producer has seen the mark), else null: the loop
   * polls as usual meanwhile.
   */
  idle(now: number, wakeAt: number): number | null {
    this.idleRounds++;
    const quiet = this.s.tickIdlePeekMs > 0 && wakeAt - now > this.s.tickIdlePeekMs;
    if (!quiet) {
      if (this.markedAt !== null) this.change = "clear";
      return null;
    }
    if (this.markedAt === null) {
      if (this.idleRounds >= 3) this.change = this.ttl;
      return null;
    }
    if (now - this.markedAt < SLEEP_MARK_STALENESS_MS + this.s.tickPollMs) return null;
    this.change = this.ttl;
    // A poll before the next known work, so the loop is awake when it comes.
    return Math.min(wakeAt - now - this.s.tickPollMs, this.s.tickIdlePeekMs);
  }
}
