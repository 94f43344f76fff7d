import { unlookedUntil } from "./cron-look.js";
import { SLEEP_MARK_STALENESS_MS } from "./wake.js";

/** A change to the sleep mark that a poll carries: set it to "1" for this many ms, set it to "c", or clear it. */
export type MarkChange = number | "c" | "clear";

/** What an idle round leads to: poll as usual (null), sleep this many ms before the next look, or end the loop. */
export type IdleStep = number | null | "end";

/**
 * The loop's idle state. After a few empty rounds with nothing due within
 * TICK_IDLE_PEEK_MS the loop marks itself asleep (producers then start jobs
 * due sooner themselves, src/tick/wake.ts), keeps polling until every
 * producer has seen the mark, and from then on looks only every
 * TICK_IDLE_PEEK_MS, renewing the mark ("1", expiring) with each look. Work,
 * or anything due sooner, clears it.
 *
 * A loop that may end idle (the deployment has its wake alarm) and finds
 * nothing due before the next cron's look marks "c" instead: once every
 * producer has seen it, the loop ends; producers then cover every job due
 * before the next cron (a drain, or the alarm) and the cron looks with one
 * request (src/tick/cron-look.ts). Each change rides on the loop's next poll.
 */
export class SleepMark {
  private idleRounds = 0;
  private marked: { kind: "1" | "c"; at: number } | null = null;
  // The first poll clears a mark a previous invocation left behind.
  private change: MarkChange | undefined = "clear";
  private readonly ttl: number;

  constructor(private readonly s: { tickIdlePeekMs: number; tickPollMs: number; endWhenIdle?: boolean }) {
    this.ttl = 3 * s.tickIdlePeekMs;
  }

  /** The change the next poll carries, if any. */
  get pending(): MarkChange | undefined {
    return this.change;
  }

  /** Whether the loop counts as asleep once the pending change is made (for the status it writes). */
  get asleep(): boolean {
    return this.change === undefined ? this.marked !== null : this.change !== "clear";
  }

  /** The poll carrying the pending change succeeded at `now`. */
  polled(now: number): void {
    if (this.change === "clear") this.marked = null;
    else if (this.change !== undefined) {
      const kind = this.change === "c" ? "c" : "1";
      if (this.marked?.kind !== kind) this.marked = { kind, at: now };
    }
    this.change = undefined;
  }

  /** A round started work. */
  worked(): void {
    this.idleRounds = 0;
    if (this.marked !== null) this.change = "clear";
  }

  /**
   * A round with nothing to start and nothing running, whose next known work
   * is at `wakeAt`: poll as usual meanwhile (null), sleep before the next
   * look once every producer has seen the mark, or end the loop.
   */
  idle(now: number, wakeAt: number): IdleStep {
    this.idleRounds++;
    const quiet = this.s.tickIdlePeekMs > 0 && wakeAt - now > this.s.tickIdlePeekMs;
    if (!quiet) {
      if (this.marked !== null) this.change = "clear";
      return null;
    }
    const kind = this.s.endWhenIdle === true && wakeAt >= unlookedUntil(now) ? "c" : "1";
    if (this.marked?.kind !== kind) {
      // A mark of the other kind counts as none: producers must see this one before the loop relies on it.
      if (this.idleRounds >= 3) this.change = kind === "c" ? "c" : this.ttl;
      return null;
    }
    if (now - this.marked.at < SLEEP_MARK_STALENESS_MS + this.s.tickPollMs) return null;
    if (kind === "c") return "end";
    this.change = this.ttl;
    // A poll before the next known work, so the loop is awake when it comes.
    return Math.min(wakeAt - now - this.s.tickPollMs, this.s.tickIdlePeekMs);
  }
}
